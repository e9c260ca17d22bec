package redissem_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
)

// stallFloor is a go-redis hook that, once on, holds every run of one
// script (the quorum's token floor, lua/quorum_floor.lua, or another)
// until release is closed, whatever the command's ctx: a master that
// stalls after it granted, seen through a client without
// ContextTimeoutEnabled.
type stallFloor struct {
	on      atomic.Bool
	once    sync.Once
	held    chan struct{} // closed when the first run is held
	sha     string        // of the script, as EVALSHA names it
	script  string        // as EVAL sends it
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
				h.once.Do(func() { close(h.held) })
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
	hook := stallScript(t, "lua/quorum_floor.lua")

	prefix := uniquePrefix(t)
	ms := masters(t, 3)
	cs := clientsOf(t, ms)
	for _, c := range cs {
		c.AddHook(hook)
	}
	q := redissem.NewQuorum(cs, "raise", 1, redissem.WithKeyPrefix(prefix), redissem.WithOperationTimeout(300*time.Millisecond),
		redissem.WithMasterTimeout(time.Second))
	defer q.Close()
	// Before q closes: Close waits for the held round trip, which a real
	// client's read timeout would end.
	defer close(hook.release)
	ctx := context.Background()
	p := acquire(t, q)
	ok(t, p.Release(ctx))
	// Every master's next token differs, so the permit's masters but one
	// must be raised.
	for i, c := range cs {
		ok(t, c.HSet(ctx, prefix+"{raise}:m", "tok", p.Token()+int64(i+1)<<40).Err())
	}
	hook.on.Store(true)

	acquireUntilDeadline(t, q, time.Second, 2*slack, "granted without raising the token floor")
	hook.wasHeld(t, "token-floor")
}

// wasHeld fails the test unless a run of the script was held (soon): else
// the hook matched nothing, and the test proved nothing.
func (h *stallFloor) wasHeld(t *testing.T, what string) {
	t.Helper()
	select {
	case <-h.held:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s script was held: the hook does not match the script", what)
	}
}

// stallScript returns a stallFloor for the script of file, off until the
// test turns it on.
func stallScript(t *testing.T, file string) *stallFloor {
	t.Helper()
	lua, err := os.ReadFile(file)
	ok(t, err)
	return stallText(string(lua))
}

// stallText returns a stallFloor for the script whose text is lua.
func stallText(lua string) *stallFloor {
	sum := sha1.Sum([]byte(lua))
	return &stallFloor{sha: hex.EncodeToString(sum[:]), script: lua, held: make(chan struct{}), release: make(chan struct{})}
}

// TestQuorumCancelReturnsWhileReleasesStall: a quorum Acquire whose ctx
// ends returns by its deadline although giving back the grant it already
// had stalls on its master. The rollback used to run before Acquire
// returned, so the stalled release (bounded only by the operation timeout)
// held the caller past its deadline. The grant is still given back, in
// the background.
func TestQuorumCancelReturnsWhileReleasesStall(t *testing.T) {
	hook := stallText(redissem.ReleaseScript())

	prefix := uniquePrefix(t)
	ms := masters(t, 3)
	cs := clientsOf(t, ms)
	// In the order the quorum asks them (by address), so that cs[0] is
	// asked first.
	slices.SortFunc(cs, func(a, b redis.UniversalClient) int {
		return strings.Compare(a.(*redis.Client).Options().Addr, b.(*redis.Client).Options().Addr)
	})
	cs[0].AddHook(hook)
	ctx := context.Background()
	// Masters 1 and 2 are held outside the quorum: its Acquire gets
	// master 0 (asked first), then queues on master 1.
	for _, c := range cs[1:] {
		s := redissem.New(c, "stall", 1, redissem.WithKeyPrefix(prefix))
		defer s.Close()
		p := acquire(t, s)
		defer func() { _ = p.Release(ctx) }()
	}
	q := redissem.NewQuorum(cs, "stall", 1, redissem.WithKeyPrefix(prefix), redissem.WithOperationTimeout(time.Second),
		redissem.WithMasterTimeout(time.Second))
	defer q.Close()
	defer close(hook.release) // before q closes (see TestQuorumRaiseHonoursCtx)
	hook.on.Store(true)

	acquireUntilDeadline(t, q, 500*time.Millisecond, slack, "granted while two masters of three were held")
	hook.wasHeld(t, "release") // the give-back runs in the background
}

// acquireUntilDeadline runs q.Acquire with a ctx that ends after wait, in
// which no permit can be granted (a grant fails the test with why), and
// fails the test unless it returns the ctx's DeadlineExceeded at most late
// after the deadline.
func acquireUntilDeadline(t *testing.T, q *redissem.Quorum, wait, late time.Duration, why string) {
	t.Helper()
	ctx := context.Background()
	actx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		p, err := q.Acquire(actx)
		if p != nil {
			_ = p.Release(ctx)
			err = errors.New(why)
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		took := time.Since(start)
		t.Logf("returned after %v: %v", took, err)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the ctx's DeadlineExceeded", err)
		}
		if took > wait+late {
			t.Errorf("Acquire returned %v after it began, more than %v past its %v deadline", took, late, wait)
		}
	case <-time.After(wait + late + 4*time.Second):
		t.Fatalf("Acquire not done %v after its %v deadline", late+4*time.Second, wait)
	}
}
