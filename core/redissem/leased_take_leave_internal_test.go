package redissem

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// scriptLog is a go-redis hook that records which of the leased mode's
// scripts each command ran, by name, in order.
type scriptLog struct {
	mu    sync.Mutex
	names map[string]string // SHA-1 -> name
	ran   []string
}

func newScriptLog() *scriptLog {
	return &scriptLog{names: map[string]string{
		scriptShare.Hash(): "share", scriptShareGive.Hash(): "give", scriptShareTake.Hash(): "take",
	}}
}

func (h *scriptLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *scriptLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && strings.EqualFold(cmd.Name(), "evalsha") {
			if sha, _ := args[1].(string); h.names[sha] != "" {
				h.mu.Lock()
				h.ran = append(h.ran, h.names[sha])
				h.mu.Unlock()
			}
		}
		return next(ctx, cmd)
	}
}

// take returns the scripts run since the last call.
func (h *scriptLog) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	ran := h.ran
	h.ran = nil
	return ran
}

// TestLeasedIdleProcessTakesAndLeavesByOneScriptEach: a process of a
// semaphore that others use now and then. Its Acquire, with capacity free,
// registers it and takes its unit in one lean script (share_take.lua), in
// the caller's goroutine; once the unit has gone unused, one give-back
// (share_give.lua) returns it and deletes the process's entry, and its
// loop stops: no heartbeat, no leave. The next Acquire registers anew by
// one take, with a new epoch (its tokens jump). share.lua never runs.
func TestLeasedIdleProcessTakesAndLeavesByOneScriptEach(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	t.Cleanup(func() { _ = c.Close() })
	prefix := "t" + rand.Text()[:10] + ":"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	other := slowLeased(t, c, prefix, "idle", 2)
	po, err := other.Acquire(ctx) // the shares hash exists, one unit held
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = po.Release(ctx) }()

	log := newScriptLog()
	cl := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	t.Cleanup(func() { _ = cl.Close() })
	cl.AddHook(log)
	s := slowLeased(t, cl, prefix, "idle", 2)
	l := s.l
	var tokens []int64
	for round := range 2 {
		p, err := s.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, p.Token())
		if ran := log.take(); len(ran) != 1 || ran[0] != "take" {
			t.Fatalf("round %d: Acquire ran %v, want [take]", round, ran)
		}
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
		testwait.Until(t, time.Minute, "the loop did not stop once the share went unused", func() bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			return !l.running
		})
		if ran := log.take(); len(ran) != 1 || ran[0] != "give" {
			t.Fatalf("round %d: release and idle ran %v, want [give]", round, ran)
		}
		if err := c.HGet(ctx, l.keys[0], "p:"+l.pid).Err(); err != redis.Nil {
			t.Fatalf("round %d: the process's entry after it left: %v, want none", round, err)
		}
	}
	if tokens[1]>>32 <= tokens[0]>>32 {
		t.Fatalf("tokens %d then %d: the second registration kept the epoch", tokens[0], tokens[1])
	}
}
