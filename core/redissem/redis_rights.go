package redissem

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// errNoRights is the cause of a call refused because the Redis user lacks
// a right of the minimum ACL (see docs/OPERATIONS.md).
var errNoRights = errors.New("the Redis user lacks rights of the minimum ACL")

// checkRights runs, before the backend's first script, the check that the
// Redis user may run every command the scripts use (lua/rights.lua), so
// that a missing right fails that first call before any write. Until one
// check succeeds, every call checks again (a right may be granted
// meanwhile). It returns by ctx's end, also when the client does not honour
// ctx deadlines. A failed check round trip returns its error. A user
// without EVAL or EVALSHA is refused whether or not the server has the
// scripts cached: by the check itself, or by Redis's own NOPERM error.
func (s *Semaphore) checkRights(ctx context.Context) error {
	b := s.b
	if b.rightsOK.Load() {
		return nil
	}
	v, err := b.callScript(ctx, ctx, scriptRights, scriptCmd(scriptRights, s.keys, s.args.notify))
	if err != nil {
		return err
	}
	if len(v) > 0 {
		missing := make([]string, len(v))
		for i, c := range v {
			missing[i] = fmt.Sprint(c)
		}
		return fmt.Errorf("%w: it may not run %s", errNoRights, strings.Join(missing, ", "))
	}
	b.rightsOK.Store(true)
	return nil
}
