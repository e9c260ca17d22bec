package redissem

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distsem/distsem/core"

	"github.com/redis/go-redis/v9"
)

// Quorum is a semaphore over several independent Redis masters (not
// replicas of each other): a permit counts only when enough of them grant
// it, as in Redlock (NewQuorum) or in Redisson's MultiLock (NewAllOf: every
// master). Each master runs an ordinary Redis semaphore of this package,
// with its own leases, FIFO queue, renewal loop and pub/sub listener.
//
// # How many masters must grant
//
// NewAllOf: all N. NewQuorum: the smallest q with q·(L+1) > N·L for the
// limit L, so that any L+1 permits share a master, which grants at most L.
// For L = 1 (a lock) that is a majority, as in Redlock. A majority is not
// enough above 1: at L = 2 three permits granted by masters {0,1}, {1,2}
// and {0,2} of 3 fit every master. So q grows with L (3 masters: 2 for
// L = 1, 3 from L = 2; 5 masters: 3, 4, 4, then 5 from L = 4), and the
// number of masters that may fail, N − q, shrinks to 0: for a large limit
// a quorum buys no availability over NewAllOf.
//
// # How a permit is granted
//
// Acquire asks the masters one after the other, in one order for every
// process (see NewQuorum), and asks the next one only once the previous
// one granted or failed; it succeeds once q have granted within the validity window, as in Redlock:
// the local time at which each lease is known to have started at the
// latest (the request's send time, plus the master's own TIME between
// queueing and grant for a permit handed over later) plus the lease TTL,
// minus the clock drift allowance (WithClockDrift), must still lie ahead
// for q of them. Otherwise, or when Acquire gives up, every grant is
// released on every master (rolled back). After success the remaining
// masters are asked in the background, and their grants join the permit
// until it is released, so that a permit held long is held on every master
// that is up. TryAcquire asks all masters at once, never queues, and rolls
// back if fewer than q grant.
//
// A master that neither grants nor queues the request within
// WithMasterTimeout (down or stalled), or that reports a backend error
// while the request is queued there, is skipped. Release waits for every
// master's answer, bounded by its ctx.
//
// # No split votes, FIFO
//
// Contenders that queued on all masters at once could split the votes:
// each holding some masters and waiting for the others, for ever. Asking
// the masters in one fixed order rules that out (a holder of master i only
// ever waits for masters after i, so no cycle of waits can form), without
// timers or random back-off. It keeps FIFO order: contenders are served in
// the order in which they queued on the first master that is up. FIFO does
// not hold across a change of that master (it went down, or a request
// skipped it), nor for a contender whose grants outlived the validity
// window (or whose token floor too few masters took): it gives its grants
// back and starts again at the back, after a random pause that grows with
// each such round (2 ms to 200 ms), so that a round that cannot succeed
// does not spin. The price is latency: q round trips
// one after the other when no one waits, against one for a single Redis.
//
// # Tokens
//
// A permit's token is the largest token its q masters gave it. Before
// Acquire returns it raises the token counter of q masters to that value
// (one more round trip, in parallel; script lua/quorum_floor.lua). So if
// Acquire of permit B was called after Acquire of permit A returned, and no
// master lost its data in between, then B.Token() > A.Token(): the two sets
// of q masters share a master (q > N/2), whose next token is above the
// counter A raised. Masters' tokens are also their server time in
// microseconds, so across a master that lost its data tokens still increase
// as long as the masters' clocks agree to better than the time between the
// two grants.
//
// # What it does not guarantee
//
// The quorum tolerates the loss of N − q masters: crashed, stalled,
// partitioned, or restarted empty. Its safety still rests on timing, as the
// Redlock debate showed (Kleppmann, "How to do distributed locking",
// martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html;
// antirez, "Is Redlock safe?", antirez.com/news/101; the disclaimer of the
// Redis documentation on distributed locks): a holder paused (GC, swap, a
// stopped VM) for longer than its lease, a master whose clock jumps forward
// (Redis ends leases by wall-clock time), or a master that restarts empty
// while it still counted for a permit, can each let the permits in use
// exceed the limit. Use the semaphore to protect capacity; where a resource must
// reject a stale holder, pass Permit.Token to it and have it refuse tokens
// older than the newest it has seen. Stop work when Permit.Lost closes
// (fewer than q masters still keep the lease). Keep a crashed master down
// for one lease TTL before it rejoins empty (as the Redis documentation
// advises), and keep the masters' clocks free of jumps (slewing NTP).
type Quorum struct {
	nodes    []*Semaphore
	name     string
	limit    int64 // configured
	all      bool  // NewAllOf
	cfg      config
	fallback *core.Local

	mu      sync.Mutex
	closed  bool
	waiting map[*quorumHold]struct{} // Acquire calls under way
	fails   []atomic.Int64           // per master: backend errors seen
	stop    chan struct{}
	wg      sync.WaitGroup // every goroutine a Quorum starts
}

var _ core.Semaphore = (*Quorum)(nil)

//go:embed lua/quorum_floor.lua
var luaQuorumFloor string

var scriptQuorumFloor = newScript(luaQuorumFloor)

// NewQuorum returns the semaphore name of limit permits over the
// independent masters clients, enough of which must grant every permit
// that the limit holds: a majority for limit 1 (see Quorum). Use an odd
// number of masters, 3 or 5: a fourth master raises the majority without
// tolerating one more failure. Options
// are those of New (each master's semaphore uses them, but always
// fails closed) plus WithClockDrift and WithMasterTimeout;
// WithFailurePolicy applies when too few masters can be reached. Every
// process must ask the masters in the same order: NewQuorum sorts them by
// address when every client is a *redis.Client (so name each master by
// the same address everywhere), and otherwise keeps the order given (so
// give it in the same order everywhere). It panics on no clients, a nil
// client, a limit <= 0 or a bad name.
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
	ctor := "NewQuorum"
	if all {
		ctor = "NewAllOf"
	}
	cfg := buildConfig(ctor, takesQuorum, opts)
	checkLimit(ctor+" limit", limit)
	if len(clients) == 0 {
		panic("redissem: " + ctor + " expects at least one client")
	}
	checkName(ctor, name)
	clients = ordered(clients)
	q := &Quorum{name: name, limit: limit, all: all, cfg: cfg, stop: make(chan struct{}),
		waiting: make(map[*quorumHold]struct{}), fails: make([]atomic.Int64, len(clients))}
	for i, c := range clients {
		if c == nil {
			panic("redissem: " + ctor + " expects non-nil clients")
		}
		nodeCfg := cfg
		nodeCfg.policy = core.FailClosed
		nodeCfg.observer = core.ObserverFunc(func(e core.Event) { // backend errors only: the quorum reports the rest
			if e.Kind == core.EventBackendError {
				cfg.observe(e)
				q.masterFailed(i)
			}
		})
		q.nodes = append(q.nodes, newRedisBackend(ctor, c, nodeCfg).semaphore(name, limit, true))
	}
	q.fallback = newFallback(name, cfg)
	return q
}

// ordered returns the masters in the order every process must ask them
// in: by address when every client is a *redis.Client, else as given.
func ordered(clients []redis.UniversalClient) []redis.UniversalClient {
	addr := make(map[redis.UniversalClient]string, len(clients))
	for _, c := range clients {
		rc, ok := c.(*redis.Client)
		if !ok {
			return clients
		}
		addr[c] = rc.Options().Addr
	}
	out := slices.Clone(clients)
	slices.SortStableFunc(out, func(a, b redis.UniversalClient) int { return strings.Compare(addr[a], addr[b]) })
	return out
}

// WithClockDrift sets the allowance for the difference between the rates
// of the clocks of this process and of the masters over one lease, taken
// off the validity window of a quorum grant (NewQuorum, NewAllOf). The
// default is Redlock's: 1% of the lease TTL plus 2ms, with d = 0 meaning
// that default. Only NewQuorum and NewAllOf take it.
func WithClockDrift(d time.Duration) Option {
	return func(c *config) { c.quorumDrift = d; c.quorumOpts = true }
}

// WithMasterTimeout sets how long a quorum Acquire (NewQuorum, NewAllOf)
// waits for a master to answer its request (grant it, or queue it) before
// it skips that master as down or stalled and asks the next one. A master
// that queued the request is waited for as long as ctx allows. The default
// is a tenth of the lease TTL. Only NewQuorum and NewAllOf take it.
func WithMasterTimeout(d time.Duration) Option {
	return func(c *config) { c.quorumAnswer = d; c.quorumOpts = true }
}

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

// Acquire blocks until the required number of masters grant the permits
// within the validity window, ctx ends, the semaphore is closed, or too
// few masters can be reached (then the failure policy decides). On failure
// every grant it got is released on every master before it returns, except
// when ctx ends or the semaphore is closed: it then returns at once, and the
// grants are released in the background (Close waits for that; a grant
// whose master cannot be reached ends with its lease).
func (q *Quorum) Acquire(ctx context.Context, opts ...core.AcquireOption) (*core.Permit, error) {
	return q.acquire(ctx, false, opts)
}

// TryAcquire asks every master once, without queueing, and succeeds if the
// required number grant; otherwise it rolls back and returns an ErrNoPermit
// error (ErrUnavailable if too few masters answered).
func (q *Quorum) TryAcquire(ctx context.Context, opts ...core.AcquireOption) (*core.Permit, error) {
	return q.acquire(ctx, true, opts)
}

// each runs f on every master at once and returns the results of those
// that succeeded, or an ErrUnavailable error if fewer than the required
// number did.
func each[T any](ctx context.Context, q *Quorum, op string, f func(context.Context, *Semaphore) (T, error)) ([]T, error) {
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
	_, err := each(ctx, q, "set limit", func(ctx context.Context, s *Semaphore) (struct{}, error) {
		return struct{}{}, s.SetLimit(ctx, limit)
	})
	return err
}

// Stats asks every master and reports, over those that answer (at least
// the required number, or an ErrUnavailable error): the highest limit,
// permits in use and number of waiters any of them reports. (A waiter
// queues on the masters one after the other, first on the first.)
func (q *Quorum) Stats(ctx context.Context) (core.Stats, error) {
	all, err := each(ctx, q, "stats", func(ctx context.Context, s *Semaphore) (core.Stats, error) { return s.Stats(ctx) })
	if err != nil {
		return core.Stats{}, err
	}
	st := all[0]
	for _, o := range all[1:] {
		st.Limit, st.InUse, st.Waiting = max(st.Limit, o.Limit), max(st.InUse, o.InUse), max(st.Waiting, o.Waiting)
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

// masterFailed wakes the Acquire calls under way: those queued on master i
// stop waiting for it (see skipFailed).
func (q *Quorum) masterFailed(i int) {
	q.fails[i].Add(1)
	q.mu.Lock()
	defer q.mu.Unlock()
	for h := range q.waiting {
		h.poke()
	}
}

// report passes a backend error to WithOnError and the observer.
func (q *Quorum) report(err error) {
	if q.cfg.onError != nil {
		q.cfg.onError(err)
	}
	q.cfg.observe(core.Event{Kind: core.EventBackendError, Name: q.name, Err: err})
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
