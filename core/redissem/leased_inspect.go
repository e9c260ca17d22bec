package redissem

import (
	"cmp"
	"context"
	_ "embed"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

var (
	//go:embed lua/inspect_shares.lua
	luaInspectShares    string
	scriptInspectShares = newScript(luaInspectShares)
)

var _ core.Inspector = (*Leased)(nil)

// Inspect lists the semaphore's holders and waiters; see core.Inspector.
// In this mode the holders Redis knows are the processes, each holding a
// share of the limit: Holders lists one per process with a share, earliest
// lease end first, its ID the process's entry, Weight its share (which
// covers the permits it has in use), LeaseEnd the end of its share's lease,
// Owner its WithOwner, and no token, grant time or note (its permits'
// tokens increase only within the process). Waiters are queued within each
// process: Waiters lists this process's, head first, with their notes;
// the other processes' are counted in Waiting (as of their last renewal)
// and OmittedWaiters. InUse is the permits in use here and in the other
// processes as of their last renewal, as Stats reports. It costs one
// read-only script, bounded by ctx and the operation timeout.
func (s *Leased) Inspect(ctx context.Context, limit int) (core.Snapshot, error) {
	if err := backend.CheckInspectLimit(limit); err != nil {
		return core.Snapshot{}, err
	}
	l := s.l
	rctx, cancel := bound(ctx, l.s.b.cfg.fault.opTimeout)
	defer cancel()
	v, err := l.s.b.callRetry(rctx, scriptInspectShares, scriptCmd(scriptInspectShares, l.keys))
	var snap core.Snapshot
	if err == nil {
		snap, err = l.parseShares(v)
	}
	if err != nil {
		if ctx.Err() != nil {
			return core.Snapshot{}, ctxError(ctx, l.s.name)
		}
		return core.Snapshot{}, unavailable("inspect", l.s.name, err)
	}
	if len(snap.Holders) > limit {
		snap.OmittedHolders = int64(len(snap.Holders) - limit)
		snap.Holders = snap.Holders[:limit]
	}
	local, err := l.loc.Inspect(ctx, limit)
	if err != nil {
		return core.Snapshot{}, err
	}
	inUse, waiting := l.localTotals()
	snap.InUse += inUse
	snap.Waiting += waiting
	snap.Waiters = local.Waiters
	snap.OmittedWaiters = snap.Waiting - int64(len(local.Waiters))
	return snap, nil
}

// parseShares reads inspect_shares.lua's reply into the holders, limit
// and the other processes' totals.
func (l *leased) parseShares(v []any) (core.Snapshot, error) {
	if len(v) != 2 {
		return core.Snapshot{}, errInspectReply
	}
	nowUS, _ := v[0].(int64)
	all, _ := v[1].([]any)
	snap := core.Snapshot{At: time.UnixMicro(nowUS), Limit: l.s.limit}
	owners := make(map[string]string)
	for i := 0; i+1 < len(all); i += 2 {
		f, _ := all[i].(string)
		val, _ := all[i+1].(string)
		switch {
		case f == "limit":
			if n, err := strconv.ParseInt(val, 10, 64); err == nil {
				snap.Limit = n
			}
		case strings.HasPrefix(f, "o:"):
			owners[f[2:]] = val
		case strings.HasPrefix(f, "p:"):
			// "share:demand:inuse:waiting:need:exp:epoch[:qat:ver:told]" (share.lua)
			e := strings.Split(val, ":")
			if len(e) < 7 {
				continue
			}
			var n [7]int64
			for j := range n {
				n[j], _ = strconv.ParseInt(e[j], 10, 64)
			}
			if n[5]*1000 <= nowUS {
				continue // its lease ended
			}
			if f[2:] != l.pid {
				snap.InUse += n[2]
				snap.Waiting += n[3]
			}
			if n[0] > 0 {
				snap.Holders = append(snap.Holders, core.Holder{ID: f[2:], Weight: n[0], LeaseEnd: time.UnixMilli(n[5])})
			}
		}
	}
	for i := range snap.Holders {
		snap.Holders[i].Owner = owners[snap.Holders[i].ID]
	}
	slices.SortFunc(snap.Holders, func(a, b core.Holder) int { return cmp.Compare(a.LeaseEnd.UnixMilli(), b.LeaseEnd.UnixMilli()) })
	return snap, nil
}
