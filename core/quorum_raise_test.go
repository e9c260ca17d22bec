package core_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
)

// stallFloor is a go-redis hook that, once on, holds every run of the
// quorum's token-floor script (lua/quorum_floor.lua) until release is
// closed, whatever the command's ctx: a master that stalls after it
// granted, seen through a client without ContextTimeoutEnabled.
type stallFloor struct {
	on      atomic.Bool
	sha     string // of the script, as EVALSHA names it
	script  string // as EVAL sends it
	release chan struct{}
}

func (h *stallFloor) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *stallFloor) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *stallFloor) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); h.on.Load() && len(args) > 1 {
			name := strings.ToLower(cmd.Name())
			if (name == "evalsha" || name == "eval") && (args[1] == h.sha || args[1] == h.script) {
				<-h.release
			}
		}
		return next(ctx, cmd)
	}
}

// TestQuorumRaiseHonoursCtx: a quorum Acquire returns by its ctx's
// deadline when a master that granted stalls as its token counter is
// raised (the round trip after the grants). raise used to wait for every
// master's answer with no bound but the client's own timeouts.
func TestQuorumRaiseHonoursCtx(t *testing.T) {
	lua, err := os.ReadFile("lua/quorum_floor.lua")
	ok(t, err)
	sum := sha1.Sum(lua)
	hook := &stallFloor{sha: hex.EncodeToString(sum[:]), script: string(lua), release: make(chan struct{})}
	defer close(hook.release) // before the clients close (deferred earlier)

	prefix := uniquePrefix(t)
	ms := masters(t, 3)
	cs := clientsOf(t, ms)
	for _, c := range cs {
		c.AddHook(hook)
	}
	q := core.NewQuorum(cs, "raise", 1, core.WithKeyPrefix(prefix), core.WithOperationTimeout(300*time.Millisecond),
		core.WithMasterTimeout(time.Second))
	defer q.Close()
	ctx := context.Background()
	p := acquire(t, q)
	ok(t, p.Release(ctx))
	// Every master's next token differs, so the permit's masters but one
	// must be raised.
	for i, c := range cs {
		ok(t, c.HSet(ctx, prefix+"{raise}:m", "tok", p.Token()+int64(i+1)<<40).Err())
	}
	hook.on.Store(true)

	const wait = time.Second
	actx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		p, err := q.Acquire(actx)
		if p != nil {
			_ = p.Release(ctx)
			err = errors.New("granted without raising the token floor")
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		t.Logf("returned after %v: %v", time.Since(start), err)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the ctx's DeadlineExceeded", err)
		}
	case <-time.After(wait + 2*slack):
		t.Fatalf("Acquire not done %v after its %v deadline", 2*slack, wait)
	}
}
