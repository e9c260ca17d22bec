package redissem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

// leased is the leased-shares mode of one Redis semaphore
// (Leased): a share of the limit leased in Redis by this process,
// and a local FIFO semaphore of the share's size. One loop (leased_loop.go)
// runs while the process has demand or holds a share: it reports the
// demand, applies the share Redis answers and renews its lease. Its
// goroutine starts once it has something to do (leased_start.go).
type leased struct {
	s    *Semaphore
	pid  string   // this process's entry in the shares hash
	keys []string // the shares hash, under the semaphore's hash tag
	loc  *backend.Share

	wake   chan struct{} // pokes the loop
	retime chan struct{} // tells the loop that due moved earlier
	// slot is held (its one place filled) by the goroutine that runs a
	// beat: the loop, or a caller running a lean script (leanNow); st is
	// that goroutine's.
	slot chan struct{}
	st   beatState

	mu           sync.Mutex
	demand       int64                    // weight of callers in Acquire or holding
	arriving     map[int64]int            // weight -> callers in Acquire not yet queued locally (needLocked)
	peak         int64                    // highest demand since the last beat
	held         map[*leasedPermit]bool   // -> lost already
	waiting      map[*waitCancel]struct{} // queued locally: ended on an outage
	running      bool                     // the loop runs
	closed       bool                     // Close stopped the loop
	down         bool                     // no valid share and Redis unreachable
	downErr      error                    // while down: the failed beat's error
	shrink       bool                     // Redis holds more share than the local limit
	beatDone     chan struct{}            // closed after each beat, then replaced
	beatGen      uint64                   // beats started (each reads the demand)
	doneGen      uint64                   // the generation of the last beat done
	reported     int64                    // the demand the last beat reported
	reportedNeed int64                    // the head's weight it reported
	turnEnd      int64                    // in a turn (leased_turn.go): the local share's grant count at which it ends; else 0

	// The share as Redis holds it, from the last reply or push (the newest
	// version wins), and what the local share is made of (applyLocked).
	registered bool      // the process holds an entry of a valid epoch
	leftVer    int64     // the last version of the entry it left (a give-back's code 3): notes up to it are stale (a hash made anew numbers above it)
	share      int64     // this process's share in Redis
	ver        int64     // its version
	limit      int64     // the fleet-wide limit
	cap        int64     // the max-min target, which caps the local share
	contended  bool      // another process is starved (leased_push.go)
	toldAt     time.Time // when a reply or push last set contended
	free       int64     // capacity no share held, as of freeAt (< 0: unknown)
	freeAt     time.Time // when a reply last said so
	giveReq    bool      // the loop is to give back the share not in use
	giving     bool      // a give-back is in flight (either: grant nothing here)
	giveQueued bool      // giveReq waits in the client's queue of idle give-backs (leased_batch.go)
	leanFull   bool      // a lean script left the next beat to share.lua
	pushes     int64     // notes applied (for tests)
	deferred   bool      // the loop waits out shareMinGap before a beat
	lastBeat   time.Time // when the last beat was sent
	beatWanted bool      // the loop found the slot held: poke it after
	hot        bool      // the last beat of share.lua said the fleet is hot
	due        time.Time // when the last beat (the loop's, or a caller's: leanNow) asked for the next
	timerAt    time.Time // when the loop's timer fires, as it last set it (zero: it fired)

	start       loopStart     // the loop's goroutine, until it starts (leased_start.go)
	unused      chan struct{} // tells the loop that the share went unused
	unusedArmed bool          // the loop times the unused share
	freeSeq     uint64        // counts the times the share became unused
	freeSeen    uint64        // freeSeq when the loop last looked
	giveIdle    bool          // the share went back unused last time, or it is the first use: a release that leaves it unused gives it back
	single      bool          // the share came by a single-use take: Redis counts this process as told (leased_single.go)
	gaveAt      time.Time     // when a release last gave the unused share back
	wantedAt    time.Time     // when another process last wanted the share kept unused here
	left        chan struct{} // tells the loop that a release's give-back left: stop
	idle        time.Duration // shareIdle; longer in tests

	rebalance time.Duration // shareRebalance; longer in tests
	firstBeat time.Duration // after begin, when the loop beats first: shareRebalance; longer in tests
}

type waitCancel struct{ cancel context.CancelCauseFunc }

var errShareOutage = errors.New("backend unreachable and no valid share")

func newLeased(s *Semaphore) *leased {
	tag := s.keys[0][:len(s.keys[0])-1] // prefix{name}:
	l := &leased{s: s, pid: s.b.newID(false), keys: []string{tag + "ls"},
		loc:  backend.NewShare(s.label, s.limit, core.WithObserver(s.b.cfg.observer), core.WithOwner(s.b.cfg.owner)),
		wake: make(chan struct{}, 1), retime: make(chan struct{}, 1), slot: make(chan struct{}, 1), unused: make(chan struct{}, 1), left: make(chan struct{}, 1), held: make(map[*leasedPermit]bool),
		waiting: make(map[*waitCancel]struct{}), arriving: make(map[int64]int), beatDone: make(chan struct{}), limit: s.limit,
		rebalance: shareRebalance, firstBeat: shareRebalance, idle: shareIdle, giveIdle: true}
	return l
}

// poke wakes the loop, starting its goroutine if it has not started.
func (l *leased) poke() { l.signal(l.wake) }

// signal sends on ch, one of the loop's channels, unless a send waits
// there already, and starts the loop's goroutine if it has not started.
// Safe with or without l.mu held.
func (l *leased) signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
	l.startNow()
}

// acquire grants from the local share. The fast path (a permit free within
// the share, nobody queued locally) makes no round trip. Otherwise the
// caller queues locally and the loop asks Redis for more share; a
// TryAcquire waits for that one beat (bounded by ctx) and tries once more.
func (l *leased) acquire(ctx context.Context, try bool, opts []core.AcquireOption) (*core.Permit, error) {
	s := l.s
	a, err := buildAcquire(s.b.cfg.leaseTTL, opts)
	if err != nil {
		return nil, err
	}
	if a.ttlSet {
		return nil, invalid("WithLeaseTTL on %q: in the leased-shares mode every permit has its process's share's lease", s.name)
	}
	if ctx.Err() != nil {
		return nil, ctxError(ctx, s.name)
	}
	if s.b.isClosed() {
		return nil, core.ErrClosed
	}
	if p, err := l.loc.TryAcquire(ctx, opts...); err == nil {
		return l.hold(ctx, p, true)
	} else if !errors.Is(err, core.ErrNoPermit) {
		return nil, err
	}
	if l.unqueueGive() {
		if p, err := l.loc.TryAcquire(ctx, opts...); err == nil {
			return l.hold(ctx, p, true)
		}
	}
	if try {
		if why := l.noRoom(); why != "" {
			return nil, fmt.Errorf("%w: %q: %s", core.ErrNoPermit, s.name, why)
		}
	}
	if err := l.begin(a.weight); err != nil {
		return nil, err
	}
	p, err := l.wait(ctx, try, a.weight, opts)
	if err != nil {
		l.end(a.weight)
		if errors.Is(err, errShareOutage) {
			err = unavailable("acquire", s.name, err)
			s.b.report(s.label, err)
			return s.failed(ctx, err, try, opts, a.weight)
		}
		if errors.Is(err, core.ErrClosed) {
			return nil, core.ErrClosed
		}
		return nil, err
	}
	return l.hold(ctx, p, false)
}

// noRoom tells why a round trip to Redis could not serve a TryAcquire
// that the local share cannot, as Redis told this process less than one
// rebalance ago, or "" if it might: another process waits (capacity freed
// anywhere goes to it first), or no capacity is free beyond the shares (a
// beat grows a share from free capacity only). Nothing tells a process
// that the waiters were served or that capacity came free, so an older
// word is checked by a round trip.
func (l *leased) noRoom() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !l.registered || l.closed:
		return ""
	case l.contended && time.Since(l.toldAt) < l.rebalance:
		return "other processes wait for capacity"
	case l.free == 0 && time.Since(l.freeAt) < l.rebalance:
		return "the processes' shares hold all of the limit"
	}
	return ""
}

// wait is the slow path: the local share is full or others are queued.
func (l *leased) wait(ctx context.Context, try bool, weight int64, opts []core.AcquireOption) (*core.Permit, error) {
	arrived := false
	arrive := func() { // l.mu held
		if !arrived {
			arrived = true
			l.arrivedLocked(weight)
		}
	}
	defer func() {
		if !arrived {
			l.mu.Lock()
			arrive()
			l.mu.Unlock()
		}
	}()
	l.mu.Lock()
	gen, outage := l.beatGen, l.outage()
	news := l.newsLocked(max(weight, l.loc.State().Head))
	l.mu.Unlock()
	if outage != nil {
		return nil, outage
	}
	// Hand-offs to this process are published to it: listen before it
	// can be queued. Without the subscription, its beats still apply them.
	if err := l.s.b.listen(ctx, l.s); errors.Is(err, core.ErrClosed) {
		return nil, err
	}
	if (news || try) && !l.leanNow(ctx, true) {
		l.mu.Lock()
		// (A beat that ended meanwhile may have said all there was to say.)
		news = l.newsLocked(max(weight, l.loc.State().Head))
		l.mu.Unlock()
		if news || try {
			l.poke()
		}
	}
	if try {
		// Wait for a beat that counted this call's demand.
		for {
			l.mu.Lock()
			done, doneGen := l.beatDone, l.doneGen
			l.mu.Unlock()
			if doneGen > gen {
				break
			}
			select {
			case <-done:
			case <-ctx.Done():
				return nil, ctxError(ctx, l.s.name)
			}
		}
		l.mu.Lock()
		arrive()
		l.mu.Unlock()
		p, err := l.loc.TryAcquire(ctx, opts...)
		if err != nil && !errors.Is(err, core.ErrClosed) {
			l.mu.Lock()
			outage := l.outage()
			l.mu.Unlock()
			if outage != nil {
				return nil, outage
			}
		}
		return p, err
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := &waitCancel{cancel: cancel}
	l.mu.Lock()
	l.waiting[w] = struct{}{}
	arrive()
	l.mu.Unlock()
	p, err := l.loc.Acquire(wctx, opts...)
	l.mu.Lock()
	delete(l.waiting, w)
	l.mu.Unlock()
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), errShareOutage) {
		return nil, context.Cause(wctx)
	}
	if err != nil && ctx.Err() != nil {
		return nil, ctxError(ctx, l.s.name)
	}
	return p, err
}

// newsLocked reports whether a beat would tell Redis what it needs to know
// of a caller whose weight, or the local head's, is head: a demand above
// what the last beat reported, which the shares follow (a saturated
// process waits for its next beat, which comes every shareRebalance while
// anyone wants more than its share), or a head that this process's whole
// share cannot serve (the beat asks for what it lacks). l.mu is held.
func (l *leased) newsLocked(head int64) bool {
	switch {
	case l.queuedLocked() && head <= l.reportedNeed:
		// Redis holds this process queued for a head at least as heavy:
		// the hand-off serves it, and a push tells when the queue is
		// served (pushed reports the demand then).
		return false
	case l.registered && head <= l.share && l.share >= l.limit:
		// The share is the whole limit: no beat can grow it.
		return false
	case l.contended && head <= l.share && time.Since(l.toldAt) < l.rebalance:
		// Other processes are starved: shares move by hand-off only, and
		// the release that frees a unit here reports the demand with its
		// give-back.
		return false
	case l.demand > l.reported:
		return true
	}
	// Redis knows already if the process is starved: the beat queued it.
	return !l.queuedLocked() && head > l.share
}

// queuedLocked reports whether Redis holds this process queued: its last
// beat reported a head caller that its share, as Redis last said, cannot
// serve (or a lean script left that beat to share.lua). Until the share
// covers that head, the hand-off serves it, and a take would be a wasted
// round trip. l.mu is held.
func (l *leased) queuedLocked() bool {
	return l.reportedNeed > l.share
}

// outage returns, while the process is down, errShareOutage wrapping the
// error of the beat that failed; nil otherwise. l.mu is held.
func (l *leased) outage() error {
	switch {
	case !l.down:
		return nil
	case l.downErr == nil:
		return errShareOutage
	}
	return fmt.Errorf("%w: %w", errShareOutage, l.downErr)
}

// begin counts weight as demand and starts the loop if it is not running.
func (l *leased) begin(weight int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return core.ErrClosed
	}
	l.demand += weight
	l.arriving[weight]++
	l.peak = max(l.peak, l.demand)
	if !l.gaveAt.IsZero() {
		// Used again soon after a release gave the share back: keep it
		// idle next time, as the loop does.
		l.giveIdle = l.givesBackNextLocked()
		l.gaveAt = time.Time{}
	}
	if !l.running {
		// The caller's take (leanNow) registers the process, or the
		// caller pokes the loop; the loop's first beat is a safety net.
		l.due = time.Now().Add(l.firstBeat)
		l.timerAt = l.due
		l.route()
		if !l.startLater(l.firstBeat) {
			l.unroute()
			l.demand -= weight
			l.arrivedLocked(weight)
			return core.ErrClosed
		}
		l.running = true
	}
	return nil
}

// arrivedLocked counts a caller of weight out of the arriving ones: it is
// about to queue locally (or to leave). l.mu is held.
func (l *leased) arrivedLocked(weight int64) {
	if l.arriving[weight]--; l.arriving[weight] <= 0 {
		delete(l.arriving, weight)
	}
}

func (l *leased) end(weight int64) {
	l.mu.Lock()
	l.demand -= weight
	l.mu.Unlock()
}
