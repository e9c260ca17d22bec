package redissem

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// scriptLog is a go-redis hook that records which of the leased mode's
// scripts each command ran, by name, in order; the scripts of one
// pipeline as one entry, their names joined by "+".
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
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var names []string
		for _, cmd := range cmds {
			if name := h.name(cmd); name != "" {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			h.mu.Lock()
			h.ran = append(h.ran, strings.Join(names, "+"))
			h.mu.Unlock()
		}
		return next(ctx, cmds)
	}
}

func (h *scriptLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := h.name(cmd); name != "" {
			h.mu.Lock()
			h.ran = append(h.ran, name)
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

// name returns the name of the leased script that cmd runs, or "".
func (h *scriptLog) name(cmd redis.Cmder) string {
	if args := cmd.Args(); len(args) > 1 && strings.EqualFold(cmd.Name(), "evalsha") {
		sha, _ := args[1].(string)
		return h.names[sha]
	}
	return ""
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
// semaphore that others use now and then, whose share was kept when idle
// (a caller came soon after its last give-back). Its Acquire, with
// capacity free, registers it and takes its unit in one lean script
// (share_take.lua), in the caller's goroutine; once the unit has gone
// unused, one give-back (share_give.lua) returns it and deletes the
// process's entry, and its loop stops: no heartbeat, no leave. Since the
// share went back unused, the next Release queues its give-back, which
// goes within giveDelay when no take carries it (leased_batch.go). The
// next Acquire registers anew by one take, with a new epoch (its tokens
// jump). A caller that comes within the idle time of such a give-back
// makes the process keep its share when idle again. share.lua never runs.
func TestLeasedIdleProcessTakesAndLeavesByOneScriptEach(t *testing.T) {
	ctx, c, log, s := nextToAHolder(t, "idle")
	l := s.l
	l.giveIdle = false // kept when idle: the loop times the unused share
	entry := func() error { return c.HGet(ctx, l.keys[0], "p:"+l.pid).Err() }
	stopped := func() { loopStops(t, l, "the loop did not stop once the share went back") }
	var tokens []int64
	for round := range 3 {
		if round == 2 {
			l.mu.Lock()
			l.idle = time.Hour // the next caller comes within the idle time of the give-back
			l.mu.Unlock()
		}
		p := takeOnce(t, log, func() (*core.Permit, error) { return s.Acquire(ctx) })
		tokens = append(tokens, p.Token())
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
		switch round {
		case 0: // the loop gives the unit back once it went unused
			stopped()
			if ran := log.take(); len(ran) != 1 || ran[0] != "give" {
				t.Fatalf("round 0: release and idle ran %v, want [give]", ran)
			}
		case 1: // the release's give-back, queued, goes by itself
			stopped()
			if ran := log.take(); len(ran) != 1 || ran[0] != "give" {
				t.Fatalf("round 1: Release ran %v, want [give]", ran)
			}
		case 2: // kept: it was used again soon after the last give-back
			if ran := log.take(); len(ran) != 0 {
				t.Fatalf("round 2: Release ran %v, want nothing", ran)
			}
			if err := entry(); err != nil {
				t.Fatalf("round 2: the process's entry after Release: %v, want it kept", err)
			}
			continue
		}
		if err := entry(); err != redis.Nil {
			t.Fatalf("round %d: the process's entry after it left: %v, want none", round, err)
		}
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i]>>32 <= tokens[i-1]>>32 {
			t.Fatalf("tokens %v: registration %d kept the epoch", tokens, i)
		}
	}
}

// TestLeasedFirstUseGivesItsShareBackAtRelease: a process's first use of
// a semaphore says nothing yet of how often it comes back, so the release
// that leaves its share unused gives the share back (queued, sent within
// giveDelay when no take carries it) and the process leaves, without
// waiting for the share to go unused for the idle time (an hour here).
func TestLeasedFirstUseGivesItsShareBackAtRelease(t *testing.T) {
	ctx, c, log, s := nextToAHolder(t, "first")
	l := s.l
	l.mu.Lock()
	l.idle = time.Hour
	l.mu.Unlock()
	p := takeOnce(t, log, func() (*core.Permit, error) { return s.Acquire(ctx) })
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	loopStops(t, l, "the first use's share was not given back at its release")
	if ran := log.take(); len(ran) != 1 || ran[0] != "give" {
		t.Fatalf("Release ran %v, want [give]", ran)
	}
	if err := c.HGet(ctx, l.keys[0], "p:"+l.pid).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("the process's entry after it gave its share back: %v, want none", err)
	}
}

// nextToAHolder returns a leased semaphore of limit 2 named name, on a
// client logged by log, whose other process (on client c) holds one unit,
// so that the shares hash exists; ctx ends within a minute.
func nextToAHolder(t *testing.T, name string) (context.Context, *redis.Client, *scriptLog, *Leased) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	t.Cleanup(func() { _ = c.Close() })
	prefix := "t" + rand.Text()[:10] + ":"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	other := slowLeased(t, c, prefix, name, 2)
	po, err := other.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = po.Release(ctx) })
	log := newScriptLog()
	cl := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	t.Cleanup(func() { _ = cl.Close() })
	cl.AddHook(log)
	return ctx, c, log, slowLeased(t, cl, prefix, name, 2)
}

// takeOnce acquires by acq, which must run one take (share_take.lua) and
// nothing else, and returns the permit.
func takeOnce(t *testing.T, log *scriptLog, acq func() (*core.Permit, error)) *core.Permit {
	t.Helper()
	p, err := acq()
	if err != nil {
		t.Fatal(err)
	}
	if ran := log.take(); len(ran) != 1 || ran[0] != "take" {
		t.Fatalf("Acquire ran %v, want [take]", ran)
	}
	return p
}

// loopStops waits for l's loop to stop, and fails with msg if it does not
// within a minute.
func loopStops(t *testing.T, l *leased, msg string) {
	t.Helper()
	testwait.Until(t, time.Minute, msg, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return !l.running
	})
}
