package core

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Quorum is a semaphore over several independent Redis masters (not
// replicas of each other): a permit counts only when enough of them grant
// it, as in Redlock (NewQuorum: a majority) or in Redisson's MultiLock
// (NewAllOf: every master). Each master runs an ordinary Redis semaphore of
// this package, with its own leases, FIFO queue, renewal loop and pub/sub
// listener.
//
// # How a permit is granted
//
// Acquire queues on every master at once. It succeeds when the required
// number of masters have granted within the validity window: for each
// grant, the local time at which its lease is known to have started (the
// send time of the request, plus the master's own TIME difference between
// queueing and grant for a handed-off permit) plus the lease TTL, minus the
// clock drift allowance (WithClockDrift), must still lie in the future for
// the required number of masters. Otherwise, or when Acquire gives up, every
// grant is released on every master (rolled back). After success the
// remaining masters keep granting in the background (their grants join the
// permit, so that the masters agree), until the permit is released.
//
// # Split votes
//
// Contenders that queue in a different order on different masters can split
// the votes: each holds some masters and waits for the others. A contender
// that holds some but not enough grants for a random time between the split
// wait and twice it (WithSplitWait, default 50ms) gives those grants back
// and queues again on those masters only; it keeps its place on the masters
// where it still waits. The random wait breaks the symmetry, so one
// contender reaches the quorum and the split cannot last forever.
//
// FIFO holds among contenders that queued on the masters in the same order
// (for example, one after the other): they are granted in that order. It
// does not hold between contenders that queued at nearly the same time (the
// masters may see them in different orders) nor for one that gave back a
// split vote: it queues again at the back of those masters' queues.
//
// # Tokens
//
// A permit's token is the largest token its granting masters gave it.
// Before Acquire returns it raises the token counter of the required number
// of masters to that value, so: if Acquire of permit B was called after
// Acquire of permit A returned, and no master lost its data in between,
// then B.Token() > A.Token(), because the two sets of masters intersect (a
// majority each, or all) and the master they share grants B a token above
// the counter A raised. Masters' tokens are also their server time in
// microseconds, so across a master that lost its data tokens still increase
// as long as the masters' clocks agree to better than the time between the
// two grants.
//
// # What it does not guarantee
//
// The quorum tolerates the loss of a minority of masters (NewAllOf: none):
// a crashed, stalled or partitioned master, or one that restarted empty.
// Its safety still rests on timing, as the Redlock debate showed
// (Kleppmann, "How to do distributed locking", 2016; antirez, "Is Redlock
// safe?", 2016; the Redis documentation's own disclaimer): a holder paused
// (GC, swap, a stopped VM) for longer than its lease, a master whose clock
// jumps forward (Redis expires leases by wall-clock time), or a master that
// restarts empty within one lease TTL while another master of the majority
// also forgets, can each let two holders exceed the limit. Use the
// semaphore to protect capacity; where a resource must reject a stale
// holder, pass Permit.Token to it and have it refuse tokens older than the
// newest it has seen. Keep a crashed master down for one lease TTL before
// it rejoins empty, and keep the masters' clocks free of jumps (slewing
// NTP).
type Quorum struct {
	nodes    []*Redis
	name     string
	limit    int64 // configured
	all      bool  // NewAllOf
	cfg      config
	fallback *Local

	mu     sync.Mutex
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup // every goroutine a Quorum starts
}

var _ Semaphore = (*Quorum)(nil)

//go:embed lua/quorum_floor.lua
var luaQuorumFloor string

var scriptQuorumFloor = redis.NewScript(luaQuorumFloor)

// NewQuorum returns the semaphore name of limit permits over the
// independent masters clients, of which a majority (len(clients)/2 + 1)
// must grant every permit. Use an odd number of masters, 3 or 5: a fourth
// master raises the majority without tolerating one more failure. Options
// are those of NewRedis (each master's semaphore uses them, but always
// fails closed) plus WithClockDrift and WithSplitWait; WithFailurePolicy
// applies when fewer than a majority of masters can be reached. It panics
// on no clients, a nil client, a limit <= 0 or a bad name.
func NewQuorum(clients []redis.UniversalClient, name string, limit int64, opts ...Option) *Quorum {
	return newQuorum(clients, name, limit, false, opts)
}

// NewAllOf is NewQuorum where every master must grant, as Redisson's
// MultiLock: a permit survives no master's loss, and while any master is
// unreachable Acquire fails (see WithFailurePolicy) and permits held are
// lost once that master's lease ends.
func NewAllOf(clients []redis.UniversalClient, name string, limit int64, opts ...Option) *Quorum {
	return newQuorum(clients, name, limit, true, opts)
}

func newQuorum(clients []redis.UniversalClient, name string, limit int64, all bool, opts []Option) *Quorum {
	checkLimit("NewQuorum limit", limit)
	if len(clients) == 0 {
		panic("core: NewQuorum expects at least one client")
	}
	cfg := buildConfig(opts)
	checkName(name)
	q := &Quorum{name: name, limit: limit, all: all, cfg: cfg, stop: make(chan struct{})}
	nodeCfg := cfg
	nodeCfg.policy = FailClosed
	nodeCfg.reentrant = false
	// A quorum decides on every node: no leased shares.
	nodeCfg.leased = false
	nodeCfg.observer = ObserverFunc(func(e Event) { // backend errors only: the quorum reports the rest
		if e.Kind == EventBackendError {
			cfg.observe(e)
		}
	})
	for _, c := range clients {
		if c == nil {
			panic("core: NewQuorum expects non-nil clients")
		}
		q.nodes = append(q.nodes, newRedisBackend(c, nodeCfg).semaphore(name, limit, true))
	}
	if cfg.policy.mode == 2 {
		q.fallback = newLocal(name, cfg.policy.fallback, cfg)
	}
	return q
}

// WithClockDrift sets the allowance for the difference between the rates
// of the clocks of this process and of the masters over one lease, taken
// off the validity window of a quorum grant (NewQuorum, NewAllOf). The
// default is Redlock's: 1% of the lease TTL plus 2ms, with d = 0 meaning
// that default. Ignored by the other semaphores.
func WithClockDrift(d time.Duration) Option { return func(c *config) { c.quorumDrift = d } }

// WithSplitWait sets how long a quorum contender that holds some but not
// enough grants waits (a random time between d and 2d) before it gives
// them back and queues again on those masters (see Quorum). The default is
// 50ms. Ignored by the other semaphores.
func WithSplitWait(d time.Duration) Option { return func(c *config) { c.quorumSplit = d } }

// quorum returns how many masters must grant a permit: all of them for
// NewAllOf; for NewQuorum the smallest q with q·(L+1) > N·L, for N masters
// and the limit L in force (the largest a master reported, or the
// configured one). Then any L+1 permits share a master, which grants at
// most L: the limit holds. For L = 1 that is a majority, as in Redlock.
func (q *Quorum) quorum() int {
	n := int64(len(q.nodes))
	if q.all {
		return int(n)
	}
	l := q.limit
	for _, s := range q.nodes {
		l = max(l, s.seen.Load())
	}
	return int(n*l/(l+1)) + 1
}

func (q *Quorum) drift(ttl time.Duration) time.Duration {
	if q.cfg.quorumDrift > 0 {
		return q.cfg.quorumDrift
	}
	return ttl/100 + 2*time.Millisecond
}

func (q *Quorum) splitWait() time.Duration {
	if q.cfg.quorumSplit > 0 {
		return q.cfg.quorumSplit
	}
	return 50 * time.Millisecond
}

// Acquire blocks until the required number of masters grant the permits
// within the validity window, ctx ends, the semaphore is closed, or too
// few masters can be reached (then the failure policy decides). On failure
// every grant it got is released on every master before it returns.
func (q *Quorum) Acquire(ctx context.Context, opts ...AcquireOption) (*Permit, error) {
	return q.acquire(ctx, false, opts)
}

// TryAcquire asks every master once, without queueing, and succeeds if the
// required number grant; otherwise it rolls back and returns an ErrNoPermit
// error (ErrUnavailable if too few masters answered).
func (q *Quorum) TryAcquire(ctx context.Context, opts ...AcquireOption) (*Permit, error) {
	return q.acquire(ctx, true, opts)
}

// each runs f on every master at once and returns the results of those
// that succeeded, or an ErrUnavailable error if fewer than the required
// number did.
func each[T any](ctx context.Context, q *Quorum, op string, f func(context.Context, *Redis) (T, error)) ([]T, error) {
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, len(q.nodes))
	for _, s := range q.nodes {
		go func() { v, err := f(ctx, s); ch <- res{v, err} }()
	}
	var out []T
	var errs []error
	for range q.nodes {
		r := <-ch
		if r.err != nil {
			errs = append(errs, r.err)
		} else {
			out = append(out, r.v)
		}
	}
	if need := q.quorum(); len(out) < need {
		return out, unavailable(op, q.name, fmt.Errorf("%d of %d masters answered, %d needed: %w", len(out), len(q.nodes), need, errors.Join(errs...)))
	}
	return out, nil
}

// SetLimit stores the new limit on every master; it succeeds if the
// required number of them stored it.
func (q *Quorum) SetLimit(ctx context.Context, limit int64) error {
	if limit <= 0 {
		return invalid("limit %d must be positive", limit)
	}
	_, err := each(ctx, q, "set limit", func(ctx context.Context, s *Redis) (struct{}, error) {
		return struct{}{}, s.SetLimit(ctx, limit)
	})
	return err
}

// Stats asks every master and reports, over those that answer (at least
// the required number, or an ErrUnavailable error): the highest limit and
// permits in use, and the lowest number of waiters (a waiter counts once it
// has queued on every master that answered).
func (q *Quorum) Stats(ctx context.Context) (Stats, error) {
	all, err := each(ctx, q, "stats", func(ctx context.Context, s *Redis) (Stats, error) { return s.Stats(ctx) })
	if err != nil {
		return Stats{}, err
	}
	st := all[0]
	for _, o := range all[1:] {
		st.Limit, st.InUse, st.Waiting = max(st.Limit, o.Limit), max(st.InUse, o.InUse), min(st.Waiting, o.Waiting)
	}
	return st, nil
}

// Close makes queued and later Acquire calls return ErrClosed (rolling
// back what they got), closes every master's semaphore (permits held are
// no longer renewed and their Lost channels close) and waits for the
// goroutines it started. Release still returns permits after Close. It
// does not close the clients.
func (q *Quorum) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	close(q.stop)
	q.mu.Unlock()
	var errs []error
	for _, s := range q.nodes {
		errs = append(errs, s.Close())
	}
	q.wg.Wait()
	return errors.Join(errs...)
}

// report passes a backend error to WithOnError and the observer.
func (q *Quorum) report(err error) {
	if q.cfg.onError != nil {
		q.cfg.onError(err)
	}
	q.cfg.observe(Event{Kind: EventBackendError, Name: q.name, Err: err})
}

// spawn runs f in a goroutine that Close waits for (after Close, in one it
// does not: the masters' semaphores are closed, so f ends at once).
func (q *Quorum) spawn(f func()) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		go f()
		return
	}
	q.wg.Add(1)
	q.mu.Unlock()
	go func() {
		defer q.wg.Done()
		f()
	}()
}
