package redissem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"

	"github.com/redis/go-redis/v9"
)

// finish checks the validity window of the grants and raises the masters'
// tokens. It returns the permit; or nil, nil after giving every grant back
// (the window passed: the caller asks again); or an error (TryAcquire).
func (h *quorumHold) finish(ctx context.Context, start time.Time, need int) (*core.Permit, error) {
	q := h.q
	h.mu.Lock()
	type grant struct {
		i     int
		p     *holder
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
	validity := time.Until(gs[need-1].start.Add(h.a.ttl - q.cfg.clockDrift(h.a.ttl)))
	var tok, grantUS int64
	for _, g := range gs {
		if g.p.token > tok {
			tok, grantUS = g.p.token, g.p.grantUS
		}
	}
	raised := 0
	if validity > 0 {
		perms := make([]*holder, len(gs))
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
	g := backend.Grant{Weight: h.a.weight, Token: tok, Lost: h.lost}
	if grantUS != 0 {
		g.GrantedAt = time.UnixMicro(grantUS)
	}
	p := backend.NewPermit(h, g)
	h.mu.Lock()
	h.state, h.need = holdHeld, need
	for _, np := range h.perm {
		if np != nil {
			h.watch(np)
		}
	}
	h.mu.Unlock()
	q.cfg.observe(core.Event{Kind: core.EventAcquired, Name: q.name, Weight: h.a.weight, Wait: time.Since(start), Ctx: ctx})
	return p, nil
}

// raise sets the token counter of the masters of perms to at least tok and
// returns how many of them now stand at or above it. The masters are asked
// at once, and raise returns within one operation timeout, or by ctx's
// end, whatever they do (also when the client does not honour ctx
// deadlines): a master that has not answered by then counts as not
// raised, and its round trip ends in the background by the client's own
// timeouts (its backend's Close waits for it).
func (h *quorumHold) raise(ctx context.Context, tok int64, perms []*holder) int {
	octx, cancel := context.WithTimeout(ctx, h.q.cfg.fault.opTimeout)
	defer cancel()
	raised := 0
	var asked []*holder
	var dones []chan *redis.Cmd
	for _, p := range perms {
		if p.token == tok {
			raised++
			continue
		}
		done := make(chan *redis.Cmd, 1)
		p.s.b.startScript(octx, scriptQuorumFloor, scriptCmd(scriptQuorumFloor, p.s.keys[:1], tok), done)
		asked, dones = append(asked, p), append(dones, done)
	}
	// Each master's failure is reported by its own backend: the quorum
	// takes a backend's report for its master's failure.
	for i, p := range asked {
		var c *redis.Cmd
		select {
		case c = <-dones[i]:
		case <-octx.Done():
			select {
			case c = <-dones[i]:
			default:
			}
		}
		var n int
		err := octx.Err()
		if c != nil {
			n, err = c.Int()
		}
		if err != nil {
			p.s.b.report(p.s.label, unavailable("raise token", p.s.name, err))
		} else if n == 1 {
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

// rollbackBackground is rollback for an Acquire whose ctx ended (or whose
// semaphore closed): it runs in the background, so that Acquire returns at
// once instead of after a round trip to every master (or, with a master
// stalled, after the operation timeout). Close waits for it.
func (h *quorumHold) rollbackBackground(ctx context.Context) {
	h.mu.Lock()
	h.state = holdDone
	h.mu.Unlock()
	h.q.spawn(func() { h.rollback(ctx) })
}

// waitRequests waits for the requests still under way to end (they were
// cancelled), for at most WithMasterTimeout: a stalled master's request
// may take longer, and gives back its grant by itself.
func (h *quorumHold) waitRequests(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, h.q.cfg.masterTimeout(h.a.ttl))
	defer cancel()
	waitGroup(ctx, &h.nodes)
}

// takeAll empties h.perm and returns the grants it held. h.mu must be held.
func (h *quorumHold) takeAll() []*holder {
	var out []*holder
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
func releaseAll(ctx context.Context, perms []*holder) (int, []error) {
	errc := make(chan error, len(perms))
	for _, p := range perms {
		go func() { errc <- p.p.Release(ctx) }()
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
		case h.perm[i] != nil, h.running[i], errors.Is(err, core.ErrNoPermit):
		case errors.Is(err, core.ErrInvalidArgument), errors.Is(err, core.ErrClosed):
			return err
		case err != nil:
			unavail = append(unavail, err)
		}
	}
	if len(unavail) <= len(h.q.nodes)-need {
		return fmt.Errorf("%w: %q", core.ErrNoPermit, h.q.name)
	}
	return unavailable("acquire", h.q.name, fmt.Errorf("%d of %d masters failed, %d must grant: %w",
		len(unavail), len(h.q.nodes), need, errors.Join(unavail...)))
}

// failedWith applies the failure policy to err, an ErrUnavailable error.
func (h *quorumHold) failedWith(ctx context.Context, opts []core.AcquireOption, err error) (*core.Permit, error) {
	q := h.q
	q.report(err)
	return fallback(ctx, q.cfg.policy, q.fallback, h.try, opts, h.a.weight, err)
}
