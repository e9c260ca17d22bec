package redissem

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
)

// While the holders of a process are re-asserted after a switch, its new
// grants wait (within their ctx), and go ahead once it is done.
func TestNewGrantsWaitForReassertion(t *testing.T) {
	c := miniClient(t)
	s := New(c, "gate", 2)
	defer s.Close()
	ctx := context.Background()
	open := s.b.regate.shut()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.TryAcquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryAcquire during a re-assertion, ctx ending: %v, want its deadline", err)
	}
	got := make(chan error, 1)
	go func() {
		p, err := s.Acquire(ctx)
		if err == nil {
			err = p.Release(ctx)
		}
		got <- err
	}()
	select { // an observation window, not a synchronisation
	case err := <-got:
		t.Fatalf("Acquire returned (%v) during a re-assertion", err)
	case <-time.After(100 * time.Millisecond):
	}
	open()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// The re-assertion script is idempotent per id: run twice for a holder the
// primary lost, it makes it once, with its token; for a holder the primary
// has, it changes nothing; and it never exceeds the limit.
func TestReassertIdempotent(t *testing.T) {
	c := miniClient(t)
	s := New(c, "reassert", 2, WithDefaultLeaseTTL(time.Hour))
	defer s.Close()
	ctx := context.Background()
	p, err := s.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var h *holder
	s.b.mu.Lock()
	for k := range s.b.sems[s].held {
		if k.id == p.ID() {
			h = k
		}
	}
	s.b.mu.Unlock()
	if err := c.Del(ctx, s.keys[0], s.keys[1], s.keys[2]).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		lost, err := s.reassert([]*holder{h})
		if err != nil || len(lost) != 0 {
			t.Fatalf("run %d: lost %v, %v", i, lost, err)
		}
		st, err := s.Stats(ctx)
		if err != nil || st.InUse != 1 {
			t.Fatalf("run %d: in use %d (%v), want 1", i, st.InUse, err)
		}
	}
	q, err := s.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if q.Token() <= p.Token() {
		t.Fatalf("token %d after the re-asserted %d", q.Token(), p.Token())
	}
	if err := c.Del(ctx, s.keys[0], s.keys[1], s.keys[2]).Err(); err != nil {
		t.Fatal(err)
	}
	x, err := s.TryAcquire(ctx, core.WithWeight(2))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release(ctx)
	lost, err := s.reassert([]*holder{h})
	if err != nil || !lost[h.id] {
		t.Fatalf("re-asserting over the limit: lost %v, %v; want %s lost", lost, err, h.id)
	}
	if st, _ := s.Stats(ctx); st.InUse != 2 {
		t.Fatalf("in use %d after a refused re-assertion, want 2", st.InUse)
	}
}
