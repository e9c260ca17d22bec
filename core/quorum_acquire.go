package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// quorumHold is one quorum Acquire and, once granted, the permit it made:
// the grants of every master, and the goroutines that ask them.
type quorumHold struct {
	q    *Quorum
	need int // masters that must grant, fixed when granted
	a    acquireConfig
	opts []AcquireOption // for the masters: the weight and lease TTL
	try  bool
	stop context.CancelFunc // ends the masters' requests

	mu      sync.Mutex
	state   int                  // holdAcquiring, holdHeld or holdDone
	perm    []*Permit            // per master: its grant, or nil
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
var errNoAnswer = errors.New("core: the master did not answer within WithMasterTimeout")

func (q *Quorum) acquire(ctx context.Context, try bool, opts []AcquireOption) (*Permit, error) {
	a, err := buildAcquire(q.cfg.leaseTTL, opts)
	if err != nil {
		return nil, err
	}
	if p, ok, err := reenter(ctx, q.cfg.reentrant, q.name, a.weight, func(o releaser) bool {
		h, ok := o.(*quorumHold)
		return ok && h.q == q
	}); ok {
		return p, err
	}
	if ctx.Err() != nil {
		return nil, ctxError(ctx, q.name)
	}
	select {
	case <-q.stop:
		return nil, ErrClosed
	default:
	}
	n := len(q.nodes)
	wctx, stop := context.WithCancel(ctx)
	h := &quorumHold{q: q, a: a, try: try, stop: stop,
		opts: []AcquireOption{WithWeight(a.weight), WithLeaseTTL(a.ttl)},
		perm: make([]*Permit, n), errs: make([]error, n), started: make([]time.Time, n),
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
	// the other, in the order of the clients, and asks the next only once
	// the previous one granted or failed: see Quorum for why.
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
		answer.Reset(q.masterTimeout(a.ttl))
	}
	askNext()
	waited := false
	for {
		select {
		case <-h.wake:
		case <-answer.C:
			h.skipSilent(next - 1)
			continue
		case <-ctx.Done():
			h.rollback(ctx)
			err := ctxError(ctx, q.name)
			q.cfg.observe(Event{Kind: EventAbandoned, Name: q.name, Weight: a.weight, Wait: time.Since(start), Err: err})
			return nil, err
		case <-q.stop:
			h.rollback(ctx)
			return nil, ErrClosed
		}
		h.skipFailed()
		granted, running, answered := h.count(next - 1)
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
			next = 0 // the window passed and every grant was given back
			askNext()
		case granted+running+n-next < need:
			err := h.failure(ctx, need)
			h.rollback(ctx)
			if !errors.Is(err, ErrUnavailable) {
				return nil, err
			}
			return h.failedWith(ctx, opts, err)
		case running == 0 && next < n:
			askNext()
		}
		if answered {
			answer.Stop()
		}
		if !waited && !try && running > 0 {
			waited = true
			q.cfg.observe(Event{Kind: EventWait, Name: q.name, Weight: a.weight})
		}
	}
}

// masterTimeout is how long Acquire waits for a master to answer.
func (q *Quorum) masterTimeout(ttl time.Duration) time.Duration {
	if q.cfg.quorumAnswer > 0 {
		return q.cfg.quorumAnswer
	}
	return ttl / 10
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
		var p *Permit
		var err error
		if h.try {
			p, err = s.TryAcquire(ctx, h.opts...)
		} else {
			p, err = s.Acquire(ctx, append(slices.Clip(h.opts), func(a *acquireConfig) {
				a.queued = func() {
					h.mu.Lock()
					h.queued[i] = h.running[i] && h.seq[i] == mine
					h.mu.Unlock()
					h.poke()
				}
			})...)
		}
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
				_ = p.ReleaseDetached(wctx, p.ttlDuration())
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
			_ = p.ReleaseDetached(wctx, p.ttlDuration())
			return
		default:
			if p != nil {
				h.mu.Unlock()
				_ = p.ReleaseDetached(wctx, p.ttlDuration())
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

func (p *Permit) ttlDuration() time.Duration { return time.Duration(p.ttl) * time.Millisecond }

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

// count returns the grants held and the requests under way, and whether
// master cur has answered.
func (h *quorumHold) count(cur int) (granted, running int, answered bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, p := range h.perm {
		if p != nil {
			granted++
		}
		if h.running[i] {
			running++
		}
	}
	return granted, running, cur < 0 || !h.running[cur] || h.queued[cur]
}

// finish checks the validity window of the grants and raises the masters'
// tokens. It returns the permit; or nil, nil after giving every grant back
// (the window passed: the caller asks again); or an error (TryAcquire).
func (h *quorumHold) finish(ctx context.Context, start time.Time, need int) (*Permit, error) {
	q := h.q
	h.mu.Lock()
	type grant struct {
		i     int
		p     *Permit
		start time.Time // when its lease is known to have started, at the latest
	}
	var gs []grant
	for i, p := range h.perm {
		if p == nil {
			continue
		}
		at := h.started[i]
		if p.queueUS != 0 && p.grantUS > p.queueUS {
			at = at.Add(time.Duration(p.grantUS-p.queueUS) * time.Microsecond)
		}
		gs = append(gs, grant{i, p, at})
	}
	h.mu.Unlock()
	// The need-th latest known lease start bounds the window.
	slices.SortFunc(gs, func(x, y grant) int { return y.start.Compare(x.start) })
	validity := gs[need-1].start.Add(h.a.ttl - q.drift(h.a.ttl)).Sub(time.Now())
	var tok, grantUS int64
	for _, g := range gs {
		if g.p.token > tok {
			tok, grantUS = g.p.token, g.p.grantUS
		}
	}
	raised := 0
	if validity > 0 {
		perms := make([]*Permit, len(gs))
		for k, g := range gs {
			perms[k] = g.p
		}
		raised = h.raise(ctx, tok, perms)
	}
	if validity <= 0 || raised < need {
		why := fmt.Errorf("the validity window passed (%v left)", validity)
		if validity > 0 {
			why = fmt.Errorf("%d of %d masters took the token floor, %d needed", raised, len(gs), need)
		}
		if h.try {
			h.rollback(ctx)
			return h.failedWith(ctx, nil, unavailable("acquire", q.name, why))
		}
		q.report(unavailable("acquire", q.name, why))
		h.mu.Lock()
		perms := h.takeAll()
		h.mu.Unlock()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.a.ttl)
		defer cancel()
		releaseAll(rctx, perms)
		return nil, nil
	}
	p := &Permit{owner: h, weight: h.a.weight, token: tok, ttl: h.a.ttl.Milliseconds(), lost: h.lost, grantUS: grantUS}
	h.mu.Lock()
	h.state, h.need = holdHeld, need
	for _, np := range h.perm {
		if np != nil {
			h.watch(np)
		}
	}
	h.mu.Unlock()
	q.cfg.observe(Event{Kind: EventAcquired, Name: q.name, Weight: h.a.weight, Wait: time.Since(start)})
	return p, nil
}

// raise sets the token counter of the masters of perms to at least tok and
// returns how many of them now stand at or above it.
func (h *quorumHold) raise(ctx context.Context, tok int64, perms []*Permit) int {
	ok := make(chan bool, len(perms))
	for _, p := range perms {
		s := p.owner.(*Redis)
		if p.token == tok {
			ok <- true
			continue
		}
		go func() {
			n, err := scriptQuorumFloor.Run(ctx, s.b.client, s.keys[:1], tok).Int()
			if err != nil {
				s.b.report(s.label, unavailable("raise token", s.name, err))
			}
			ok <- err == nil && n == 1
		}()
	}
	raised := 0
	for range perms {
		if <-ok {
			raised++
		}
	}
	return raised
}

// rollback ends every request and releases every grant, bounded by the
// lease TTL whatever ctx does.
func (h *quorumHold) rollback(ctx context.Context) {
	h.mu.Lock()
	h.state = holdDone
	perms := h.takeAll()
	h.mu.Unlock()
	h.stop()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.a.ttl)
	defer cancel()
	releaseAll(ctx, perms)
	h.waitRequests(ctx)
}

// waitRequests waits for the requests still under way to end (they were
// cancelled), for at most WithMasterTimeout: a stalled master's request
// may take longer, and gives back its grant by itself.
func (h *quorumHold) waitRequests(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, h.q.masterTimeout(h.a.ttl))
	defer cancel()
	waitGroup(ctx, &h.nodes)
}

// takeAll empties h.perm and returns the grants it held. h.mu must be held.
func (h *quorumHold) takeAll() []*Permit {
	var out []*Permit
	for i, p := range h.perm {
		if p != nil {
			out = append(out, p)
			h.perm[i] = nil
		}
	}
	return out
}

// releaseAll releases perms at once and returns how many were still held,
// and the errors of the others.
func releaseAll(ctx context.Context, perms []*Permit) (int, []error) {
	errc := make(chan error, len(perms))
	for _, p := range perms {
		go func() { errc <- p.Release(ctx) }()
	}
	held := 0
	var errs []error
	for range perms {
		if err := <-errc; err != nil {
			errs = append(errs, err)
		} else {
			held++
		}
	}
	return held, errs
}

// waitGroup waits for wg, or until ctx ends.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// failure is the error of an Acquire that can no longer reach the
// required number of grants.
func (h *quorumHold) failure(ctx context.Context, need int) error {
	if ctx.Err() != nil {
		return ctxError(ctx, h.q.name)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var unavail []error
	for i, err := range h.errs {
		switch {
		case h.perm[i] != nil, h.running[i], errors.Is(err, ErrNoPermit):
		case errors.Is(err, ErrInvalidArgument), errors.Is(err, ErrClosed):
			return err
		case err != nil:
			unavail = append(unavail, err)
		}
	}
	if len(unavail) <= len(h.q.nodes)-need {
		return fmt.Errorf("%w: %q", ErrNoPermit, h.q.name)
	}
	return unavailable("acquire", h.q.name, fmt.Errorf("%d of %d masters failed, %d must grant: %w",
		len(unavail), len(h.q.nodes), need, errors.Join(unavail...)))
}

// failedWith applies the failure policy to err, an ErrUnavailable error.
func (h *quorumHold) failedWith(ctx context.Context, opts []AcquireOption, err error) (*Permit, error) {
	q := h.q
	q.report(err)
	switch q.cfg.policy.mode {
	case 1:
		return &Permit{owner: nopOwner{}, weight: h.a.weight}, nil
	case 2:
		if h.try {
			return q.fallback.TryAcquire(ctx, opts...)
		}
		return q.fallback.Acquire(ctx, opts...)
	}
	return nil, err
}
