package redissem

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/distsem/distsem/core"
)

// quorumHold is one quorum Acquire and, once granted, the permit it made:
// the grants of every master, and the goroutines that ask them.
type quorumHold struct {
	q    *Quorum
	need int // masters that must grant, fixed when granted
	a    acquireSpec
	ctx  context.Context      // the acquiring call's, for EventLost (reportLost)
	opts []core.AcquireOption // for the masters: the weight and lease TTL
	try  bool
	stop context.CancelFunc // ends the masters' requests

	mu      sync.Mutex
	state   int                  // holdAcquiring, holdHeld or holdDone
	lostSet bool                 // the permit was reported lost
	perm    []*holder            // per master: its grant, or nil
	errs    []error              // per master: why its last request failed
	started []time.Time          // per master: when its last request was sent
	running []bool               // per master: a request is under way
	queued  []bool               // per master: its request is queued there
	cancel  []context.CancelFunc // per master: ends its request
	failsAt []int64              // per master: its backend errors when asked
	seq     []int                // per master: the number of its current request
	nodes   sync.WaitGroup
	alive   int // held: grants whose lease is not lost
	wake    chan struct{}
	lost    chan struct{}
	done    chan struct{} // closed by Release
}

const (
	holdAcquiring = iota
	holdHeld
	holdDone
)

// errNoAnswer is why a master that did not answer in time was skipped.
var errNoAnswer = errors.New("redissem: the master did not answer within WithMasterTimeout")

func (q *Quorum) acquire(ctx context.Context, try bool, opts []core.AcquireOption) (*core.Permit, error) {
	a, err := buildAcquire(q.cfg.leaseTTL, opts)
	if err == nil {
		err = a.refuseFlow("a quorum or all-of-N semaphore")
	}
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctxError(ctx, q.name)
	}
	select {
	case <-q.stop:
		return nil, core.ErrClosed
	default:
	}
	n := len(q.nodes)
	wctx, stop := context.WithCancel(ctx)
	h := &quorumHold{q: q, a: a, try: try, stop: stop, ctx: ctx,
		opts: []core.AcquireOption{core.WithWeight(a.weight), core.WithLeaseTTL(a.ttl)},
		perm: make([]*holder, n), errs: make([]error, n), started: make([]time.Time, n),
		running: make([]bool, n), queued: make([]bool, n), cancel: make([]context.CancelFunc, n),
		failsAt: make([]int64, n), seq: make([]int, n),
		wake: make(chan struct{}, 1), lost: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	q.mu.Lock()
	q.waiting[h] = struct{}{}
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		delete(q.waiting, h)
		q.mu.Unlock()
	}()

	// TryAcquire asks every master at once. Acquire asks them one after
	// the other, in the same order in every process, and asks the next only
	// once the previous one granted or failed: see Quorum for why.
	next := 0
	answer := time.NewTimer(time.Hour)
	defer answer.Stop()
	askNext := func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if try {
			for ; next < n; next++ {
				h.ask(wctx, next)
			}
			return
		}
		h.ask(wctx, next)
		next++
		answer.Reset(q.cfg.masterTimeout(a.ttl))
	}
	askNext()
	waited := false
	// abandoned reports a queued Acquire that gives up with err, as the
	// ctx case below does for any.
	abandoned := func(err error) {
		if waited {
			q.cfg.observe(core.Event{Kind: core.EventAbandoned, Name: q.name, Weight: a.weight, Wait: time.Since(start), Err: err, Ctx: ctx})
		}
	}
	rounds := 0 // rounds whose grants had to be given back
	for {
		select {
		case <-h.wake:
		case <-answer.C:
			h.skipSilent(next - 1) // then ask the next one, below
		case <-ctx.Done():
			h.rollbackBackground(ctx)
			err := ctxError(ctx, q.name)
			q.cfg.observe(core.Event{Kind: core.EventAbandoned, Name: q.name, Weight: a.weight, Wait: time.Since(start), Err: err, Ctx: ctx})
			return nil, err
		case <-q.stop:
			h.rollbackBackground(ctx)
			abandoned(core.ErrClosed)
			return nil, core.ErrClosed
		}
		h.skipFailed()
		granted, running, answered, queued := h.count(next - 1)
		if answered {
			answer.Stop() // before askNext below starts it for the next master
		}
		need := q.quorum()
		switch {
		case granted >= need:
			p, err := h.finish(ctx, start, need)
			if p != nil || err != nil {
				h.mu.Lock()
				for ; next < n && p != nil; next++ {
					h.ask(wctx, next) // the others join the permit as they grant
				}
				h.mu.Unlock()
				return p, err
			}
			// The window passed (or too few masters took the token
			// floor) and every grant was given back: ask again from the
			// first master, after a pause that grows with each such round,
			// so that a round that cannot succeed does not spin.
			rounds++
			if !pause(ctx, q.stop, retryPause(rounds)) {
				continue // ctx ended or Close: the select above answers
			}
			next = 0
			askNext()
		case granted+running+n-next < need:
			err := h.failure(ctx, need)
			h.rollback(ctx)
			abandoned(err)
			if !errors.Is(err, core.ErrUnavailable) {
				return nil, err
			}
			return h.failedWith(ctx, opts, err)
		case running == 0 && next < n:
			askNext()
		}
		if !waited && queued {
			waited = true
			q.cfg.observe(core.Event{Kind: core.EventWait, Name: q.name, Weight: a.weight, Ctx: ctx})
		}
	}
}

// retryPause is the pause before round r of asking again: random in
// [d/2, 3d/2) for d = 2^r ms, at most 200 ms.
func retryPause(r int) time.Duration {
	d := min(time.Millisecond<<min(r, 8), 200*time.Millisecond)
	return d/2 + rand.N(d)
}

// pause waits for d; false if ctx ended or stop closed first.
func pause(ctx context.Context, stop <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
}

// ask sends master i a request. h.mu must be held.
func (h *quorumHold) ask(wctx context.Context, i int) {
	ctx, cancel := context.WithCancel(wctx)
	h.running[i], h.queued[i], h.cancel[i] = true, false, cancel
	h.failsAt[i] = h.q.fails[i].Load()
	h.seq[i]++
	mine := h.seq[i]
	h.errs[i] = nil
	h.nodes.Add(1)
	h.q.spawn(func() {
		defer h.nodes.Done()
		defer cancel()
		s := h.q.nodes[i]
		sent := time.Now()
		var p *holder
		var err error
		a := h.a
		if !h.try {
			a.queued = func() {
				h.mu.Lock()
				h.queued[i] = h.running[i] && h.seq[i] == mine
				h.mu.Unlock()
				h.poke()
			}
		}
		p, err = s.take(ctx, h.try, a)
		h.mu.Lock()
		stale := h.seq[i] != mine // skipped, or asked again since
		if !stale {
			h.running[i], h.queued[i] = false, false
			h.started[i] = sent
		}
		switch {
		case stale && h.state != holdHeld:
			if p != nil { // too late to count: out of order
				h.mu.Unlock()
				_ = p.p.ReleaseDetached(wctx, p.ttlDuration())
				return
			}
		case h.state == holdAcquiring:
			h.perm[i] = p
			if h.errs[i] == nil {
				h.errs[i] = err
			}
		case h.state == holdHeld && p != nil && h.perm[i] == nil: // a late grant joins the permit
			h.perm[i] = p
			h.watch(p)
		case h.state == holdHeld && p != nil:
			h.mu.Unlock()
			_ = p.p.ReleaseDetached(wctx, p.ttlDuration())
			return
		default:
			if p != nil {
				h.mu.Unlock()
				_ = p.p.ReleaseDetached(wctx, p.ttlDuration())
				return
			}
		}
		h.mu.Unlock()
		h.poke()
	})
}

func (h *quorumHold) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// skipSilent gives up on master i if it has neither granted nor queued the
// request yet (it is down or stalled), so that Acquire moves on.
func (h *quorumHold) skipSilent(i int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i >= 0 && h.running[i] && !h.queued[i] {
		h.skip(i, unavailable("acquire", h.q.name, errNoAnswer))
		h.q.report(h.errs[i])
	}
}

// skip ends the request to master i and counts it as failed with err at
// once, even if the master is too stalled for the request to end soon: a
// grant it still brings is given back. h.mu must be held.
func (h *quorumHold) skip(i int, err error) {
	h.cancel[i]()
	h.seq[i]++
	h.running[i], h.queued[i], h.errs[i] = false, false, err
}

// skipFailed gives up on the masters that reported a backend error since
// they were asked (a failed heartbeat, a lost pub/sub connection): a
// request queued on a master that died would otherwise wait for a grant
// that never comes.
func (h *quorumHold) skipFailed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, run := range h.running {
		if run && h.q.fails[i].Load() != h.failsAt[i] {
			h.skip(i, unavailable("acquire", h.q.name, fmt.Errorf("master %d failed while the request waited", i)))
		}
	}
}

// count returns the grants held and the requests under way, whether
// master cur has answered, and whether a master queued the request.
func (h *quorumHold) count(cur int) (granted, running int, answered, queued bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, p := range h.perm {
		if p != nil {
			granted++
		}
		if h.running[i] {
			running++
		}
		queued = queued || h.queued[i]
	}
	return granted, running, cur < 0 || !h.running[cur] || h.queued[cur], queued
}
