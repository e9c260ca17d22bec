package redissem

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// holdGive is a go-redis hook that holds the first give-back
// (share_give.lua) before it reaches Redis until release is closed.
type holdGive struct {
	entered chan struct{}
	release chan struct{}
}

func (h *holdGive) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdGive) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *holdGive) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && strings.EqualFold(cmd.Name(), "evalsha") && args[1] == scriptShareGive.Hash() {
			select {
			case h.entered <- struct{}{}:
				<-h.release
			default:
			}
		}
		return next(ctx, cmd)
	}
}

// TestLeasedCallerArrivingWhileTheProcessLeavesIsServed: an idle process
// whose share is kept when idle (a caller came soon after its last
// give-back) gives its unused share back once the idle time has passed,
// and leaves (its entry deleted). A caller that arrives while that
// give-back is in flight waits locally; once the reply says the process
// left, the process must register again at once for it, not at its next
// heartbeat (TTL/3: 20 minutes here).
func TestLeasedCallerArrivingWhileTheProcessLeavesIsServed(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	t.Cleanup(func() { _ = c.Close() })
	h := &holdGive{entered: make(chan struct{}, 1), release: make(chan struct{})}
	c.AddHook(h)
	s := slowLeased(t, c, "t"+rand.Text()[:10]+":", "leaving", 2)
	l := s.l
	l.giveIdle = false // kept when idle: the loop gives it back, by one script
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.entered: // the idle give-back is on its way
	case <-ctx.Done():
		t.Fatal("the unused share was not given back")
	}
	done := make(chan error, 1)
	go func() {
		p, err := s.Acquire(ctx)
		if err == nil {
			err = p.Release(ctx)
		}
		done <- err
	}()
	testwait.Until(t, time.Minute, "the caller did not queue while the give-back was in flight", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.loc.State().WaitN == 1
	})
	close(h.release)
	if err := <-done; err != nil {
		t.Fatalf("the caller that came while the process left: %v", err)
	}
}
