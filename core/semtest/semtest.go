// Package semtest checks that an implementation of core.Semaphore behaves
// as distsem's own backends do. It is for authors of a backend: call Run
// from a test in the backend's package, and it runs the shared suite
// against semaphores the backend makes, as testing/fstest does for file
// systems. distsem runs the same suite on its in-process, Redis and Consul
// backends.
//
//	func TestConformance(t *testing.T) {
//		semtest.Run(t, semtest.Backend{Name: "mine", New: func(t *testing.T, limit int64) semtest.Sem {
//			s := mine.New(client, t.Name(), limit)
//			t.Cleanup(func() { _ = s.Close() })
//			return s
//		}})
//	}
//
// The backend's semaphore must implement Sem: core.Semaphore plus Stats,
// SetLimit and Close. Backend.New must return a new, empty semaphore each
// time, sharing no state with any other, and fail the test when the
// backend's server cannot be reached.
//
// The suite checks the part of
// https://github.com/distsem/distsem/blob/main/docs/GUARANTEES.md that every backend shares:
//
//   - TryAcquire grants while permits are free and fails with
//     core.ErrNoPermit once none are; the fencing tokens of successive
//     grants strictly increase, also after a release;
//   - waiters are granted in the order they queued (FIFO);
//   - a heavy waiter at the head of the queue holds back lighter waiters
//     behind it, and TryAcquire does not pass it either;
//   - releasing a permit twice is harmless: the second Release returns nil
//     and frees nothing;
//   - a weight above the limit, a weight of zero or less, a lease TTL of
//     1ms (below core's 100ms minimum), and SetLimit(0) fail at once with
//     core.ErrInvalidArgument;
//   - raising the limit with SetLimit admits waiters at once, lowering it
//     below a waiter's weight fails that waiter with
//     core.ErrInvalidArgument, and Stats reports the new limit;
//   - Close fails the queued waiters and every later Acquire with
//     core.ErrClosed;
//   - under 16 goroutines acquiring and releasing, the weight held never
//     exceeds the limit;
//   - core.Reentrant over the backend nests an Acquire whose ctx holds a
//     permit of the wrapper without waiting, and only the outermost
//     Release frees the permit;
//   - Inspect lists every holder (ID, weight, token, note, an owner) and
//     every waiter (position, weight, note, owner) in queue order, at most
//     its limit of each with a count of those left out, and refuses a
//     limit of 0; notes longer than core.MaxNoteLen or with a control
//     character fail with core.ErrInvalidArgument, and notes made of the
//     characters that storage formats use as delimiters come back as
//     given and change nothing else. A backend whose state no single
//     snapshot describes may refuse Inspect with an error matching
//     errors.ErrUnsupported, and no snapshot;
//   - after each test, Stats shows no permit held and no caller waiting.
//
// The suite observes the queue through Stats, so Stats must count the
// callers queued in Acquire. It polls Stats rather than sleeping, and
// waits up to 10 seconds for a backend that cleans up after a cancelled or
// closed waiter in the background. The tests run one after another, each
// as a subtest of the test given to Run.
//
// The helpers Stats, Acquire, TryAcquire, WaitQueued and WantStats are
// exported for a backend's own further tests.
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
	core.Inspector
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
	// every other semaphore New returned. It closes it at t's cleanup, and
	// fails t if the backend cannot be reached.
	New func(t *testing.T, limit int64) Sem
	// Shares marks a backend whose holders are per-process shares of the
	// limit (core/redissem's leased mode): Inspect lists one holder per
	// process, so the suite checks only the totals and the waiters.
	Shares bool
	// Flows marks a backend that has flows and priority levels (WithFlow,
	// WithLevel). The suite checks that any other backend refuses them. A
	// backend that is also Shares has flows within a process only, and no
	// Fairness: the cases of weights and levels skip it.
	Flows bool
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
		{"FlowsOrRefusal", testFlowsOrRefusal},
		{"FlowsQuietFlowServed", flows(testFlowsQuietFlowServed)},
		{"FlowsWeights", flows(testFlowsWeights)},
		{"FlowsJoinPlainQueue", flows(testFlowsJoinPlainQueue)},
		{"LevelsReserve", flows(testLevelsReserve)},
		{"SetLimit", testSetLimit},
		{"CloseFailsWaiters", testCloseFailsWaiters},
		{"Hammer", testHammer},
		{"Reentrant", testReentrant},
		{"Inspect", testInspect},
		{"InspectHostileNotes", testInspectHostileNotes},
	} {
		t.Run(c.name, func(t *testing.T) { c.f(t, b) })
	}
}

// flows runs f only on a backend with flows.
func flows(f func(*testing.T, Backend)) func(*testing.T, Backend) {
	return func(t *testing.T, b Backend) {
		if !b.Flows {
			t.Skipf("%s has no flows", b.Name)
		}
		f(t, b)
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

// waitBound bounds every wait of the suite: a backend that never does
// what it must fails the test instead of hanging it.
const waitBound = 10 * time.Second

// WantStats waits until s shows inUse permits held and waiting callers
// queued, and fails t if that does not happen within 10s. It polls, because
// a backend may finish a cancelled or closed waiter's clean-up in the
// background, after the caller returned.
func WantStats(t *testing.T, s Sem, inUse, waiting int64) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
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

// OneKey returns the semaphore of key in k seen as a Sem, so that Run can
// check a keyed semaphore one key at a time. Its Close closes k.
func OneKey(k *core.Keyed, key string) Sem { return oneKey{k, key} }

type oneKey struct {
	k   *core.Keyed
	key string
}

func (s oneKey) Acquire(ctx context.Context, o ...core.AcquireOption) (*core.Permit, error) {
	return s.k.Acquire(ctx, s.key, o...)
}

func (s oneKey) TryAcquire(ctx context.Context, o ...core.AcquireOption) (*core.Permit, error) {
	return s.k.TryAcquire(ctx, s.key, o...)
}

func (s oneKey) Stats(ctx context.Context) (core.Stats, error) { return s.k.Stats(ctx, s.key) }
func (s oneKey) SetLimit(ctx context.Context, n int64) error   { return s.k.SetLimit(ctx, s.key, n) }
func (s oneKey) Close() error                                  { return s.k.Close() }
func (s oneKey) SetFairness(ctx context.Context, f core.Fairness) error {
	return s.k.SetFairness(ctx, s.key, f)
}
func (s oneKey) Inspect(ctx context.Context, limit int) (core.Snapshot, error) {
	return s.k.Inspect(ctx, s.key, limit)
}
