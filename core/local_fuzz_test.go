package core_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/distsem/distsem/core"
)

// FuzzLocalQueue runs a sequence of operations, decoded from the input, on
// an in-process semaphore with callers queued: acquires with and without
// flows and levels, tries, releases, cancellations, changes of Fairness and
// of the limit. After each it checks that none panicked, that the permits
// held and the callers queued are what Stats reports, and that nobody waits
// while nothing is held. Run longer with
//
//	go test -run '^$' -fuzz '^FuzzLocalQueue$' -fuzztime 10m ./core/
func FuzzLocalQueue(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x01\x01\x02\x04\x01\x02\x00\x02\x00"))
	f.Add([]byte("\x00\x00\x00\x00\x00\x03\x01\x05\x03\x00\x02\x00\x05\x02"))
	f.Add([]byte("\x04\x03\x00\x00\x00\x0b\x00\x12\x02\x00\x03\x00\x02\x00"))
	// Callers with no flow queued, then a Fairness: the queue turns fair.
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x04\x00\x02\x00\x02\x00"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		synctest.Test(t, func(t *testing.T) { runLocalQueue(t, ops) })
	})
}

type fuzzResult struct {
	p   *core.Permit
	err error
	try bool
}

func runLocalQueue(t *testing.T, ops []byte) {
	s := core.NewLocal(2)
	defer s.Close()
	flows := []string{"", "a", "b"}
	results := make(chan fuzzResult, len(ops))
	var held []*core.Permit
	var cancels []context.CancelFunc // one per queued caller, oldest first
	pending := 0
	settle := func() {
		synctest.Wait()
		for {
			select {
			case r := <-results:
				if !r.try {
					pending--
				}
				switch {
				case r.err == nil:
					held = append(held, r.p)
				case errors.Is(r.err, context.Canceled), errors.Is(r.err, core.ErrInvalidArgument),
					r.try && errors.Is(r.err, core.ErrNoPermit):
				default:
					t.Fatalf("acquire: %v", r.err)
				}
			default:
				return
			}
		}
	}
	acquireOpts := func(b byte) []core.AcquireOption {
		opts := []core.AcquireOption{core.WithWeight(int64(1 + b%2))}
		if f := flows[int(b/2)%len(flows)]; f != "" || b&8 != 0 {
			opts = append(opts, core.WithFlow(f), core.WithLevel(int(b/16)%2))
		}
		return opts
	}
	for i := 0; i+1 < len(ops); i += 2 {
		arg := ops[i+1]
		switch ops[i] % 6 {
		case 0: // Acquire, queued if no permit is free
			ctx, cancel := context.WithCancel(t.Context())
			cancels = append(cancels, cancel)
			pending++
			go func() {
				p, err := s.Acquire(ctx, acquireOpts(arg)...)
				results <- fuzzResult{p, err, false}
			}()
		case 1: // TryAcquire
			p, err := s.TryAcquire(t.Context(), acquireOpts(arg)...)
			results <- fuzzResult{p, err, true}
		case 2: // release the oldest permit
			if len(held) > 0 {
				if err := held[0].Release(t.Context()); err != nil {
					t.Fatalf("Release: %v", err)
				}
				held = held[1:]
			}
		case 3: // cancel the oldest caller that may be queued
			if len(cancels) > 0 {
				cancels[0]()
				cancels = cancels[1:]
			}
		case 4: // SetFairness: one or two levels, flow a weighted
			f := core.Fairness{Weights: map[string]int64{"a": int64(1 + arg%3)}}
			if arg&4 != 0 {
				f.Reserves = []int64{0, int64(arg/8) % 2}
			}
			if err := s.SetFairness(t.Context(), f); err != nil && !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("SetFairness(%+v): %v", f, err)
			}
		case 5: // SetLimit
			if err := s.SetLimit(t.Context(), int64(1+arg%3)); err != nil {
				t.Fatalf("SetLimit: %v", err)
			}
		}
		settle()
		st, err := s.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var w int64
		for _, p := range held {
			w += p.Weight()
		}
		if st.InUse != w || st.Waiting != int64(pending) {
			t.Fatalf("op %d: stats %+v; want %d in use by the permits held and %d waiting", i/2, st, w, pending)
		}
		if st.Waiting > 0 && st.InUse == 0 {
			t.Fatalf("op %d: %d waiting while nothing is held: %+v", i/2, st.Waiting, st)
		}
	}
	for _, c := range cancels {
		c()
	}
	for _, p := range held {
		if err := p.Release(t.Context()); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	held = nil
	settle()
	for _, p := range held { // granted while the others were cancelled
		if err := p.Release(t.Context()); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	if st, _ := s.Stats(t.Context()); st.InUse != 0 || st.Waiting != 0 || pending != 0 {
		t.Fatalf("at the end: stats %+v, %d callers unanswered; want nothing in use or waiting", st, pending)
	}
}
