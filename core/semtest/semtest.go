// Package semtest is distsem's conformance suite: the behaviour every
// backend of core.Semaphore must share (tokens, FIFO, weights, limits,
// Close, no leaks), runnable against any backend, in this module or in a
// backend's own module (core/consul runs it against a real Consul agent).
//
//	func TestConformance(t *testing.T) {
//		semtest.Run(t, semtest.Backend{Name: "mine", New: func(t *testing.T, limit int64, opts ...core.Option) semtest.Sem {
//			s := mine.New(client, "conf", limit, opts...)
//			t.Cleanup(func() { _ = s.Close() })
//			return s
//		}})
//	}
package semtest

import (
	"context"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
)

// Sem is what the suite needs of a backend.
type Sem interface {
	core.Semaphore
	Stats(context.Context) (core.Stats, error)
	SetLimit(context.Context, int64) error
	Close() error
}

// Backend makes fresh semaphores for the suite.
type Backend struct {
	// Name names the subtests. "local" marks the in-process backend, which
	// runs more iterations.
	Name string
	// New returns a new, empty semaphore of limit permits, isolated from
	// every other semaphore New returned, built with opts. It closes it at
	// t's cleanup, and fails or skips t if the backend cannot be reached.
	New func(t *testing.T, limit int64, opts ...core.Option) Sem
}

// Run runs every test of the suite against b, each as a subtest of t, one
// after the other.
func Run(t *testing.T, b Backend) {
	for _, c := range []struct {
		name string
		f    func(*testing.T, Backend)
	}{
		{"TryAcquireAndTokens", testTryAcquireAndTokens},
		{"FIFO", testFIFO},
		{"WeightedHeadBlocksSmaller", testWeightedHeadBlocksSmaller},
		{"DoubleRelease", testDoubleRelease},
		{"OversizedWeightFailsAtOnce", testOversizedWeightFailsAtOnce},
		{"BadAcquireArguments", testBadAcquireArguments},
		{"SetLimit", testSetLimit},
		{"CloseFailsWaiters", testCloseFailsWaiters},
		{"Hammer", testHammer},
	} {
		t.Run(c.name, func(t *testing.T) { c.f(t, b) })
	}
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Stats returns s's Stats, failing t on an error.
func Stats(t *testing.T, s Sem) core.Stats {
	t.Helper()
	st, err := s.Stats(context.Background())
	ok(t, err)
	return st
}

// Acquire returns a permit of s (it may wait for it), failing t on an
// error.
func Acquire(t *testing.T, s Sem, opts ...core.AcquireOption) *core.Permit {
	t.Helper()
	p, err := s.Acquire(context.Background(), opts...)
	ok(t, err)
	return p
}

// TryAcquire returns a permit of s if one is free at once, failing t when
// none is or on an error.
func TryAcquire(t *testing.T, s Sem) *core.Permit {
	t.Helper()
	p, err := s.TryAcquire(context.Background())
	ok(t, err)
	return p
}

// WaitQueued blocks until n callers are queued on s. It polls Stats, which
// is an observation of state, not a sleep; it fails t after a minute, or
// if more than n are queued.
func WaitQueued(t *testing.T, s Sem, n int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st := Stats(t, s)
		if st.Waiting == n {
			return
		}
		if st.Waiting > n || time.Now().After(deadline) {
			t.Fatalf("waiting = %d, want %d", st.Waiting, n)
		}
	}
}

// WantStats waits until s shows inUse permits held and waiting callers
// queued, and fails t if that does not happen within 10s. It polls, because
// a backend may finish a cancelled or closed waiter's clean-up in the
// background, after the caller returned.
func WantStats(t *testing.T, s Sem, inUse, waiting int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := Stats(t, s)
		if st.InUse == inUse && st.Waiting == waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats = %+v, want in use %d, waiting %d", st, inUse, waiting)
		}
	}
}
