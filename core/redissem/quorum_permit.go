package redissem

import (
	"context"
	"errors"
	"fmt"

	"github.com/distsem/distsem/core"
)

// watch tracks the lease of grant p of a held permit: when too few grants
// keep their lease, the permit is lost. h.mu must be held.
func (h *quorumHold) watch(p *holder) {
	h.alive++
	lost := p.lost
	h.q.spawn(func() {
		select {
		case <-lost:
		case <-h.done:
			return
		}
		h.mu.Lock()
		h.alive--
		gone := h.alive < h.need && h.state == holdHeld && !h.lostSet
		h.lostSet = h.lostSet || gone
		h.mu.Unlock()
		if gone {
			h.q.cfg.reportLost(h.ctx, h.q.name, h.a.weight, nil, h.lost)
		}
	})
}

// release gives back every master's grant and stops the requests still
// under way. It waits for every master's answer, bounded by ctx (or by the
// lease TTL if ctx is already done), and succeeds if the required number of
// masters still held their grant.
func (h *quorumHold) ReleasePermit(ctx context.Context, _ *core.Permit) error {
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), h.a.ttl)
		defer cancel()
	}
	h.mu.Lock()
	h.state = holdDone
	close(h.done)
	h.mu.Unlock()
	h.stop()
	// Requests under way end first, so that a late grant is not missed:
	// once they are over, h.perm is final.
	h.waitRequests(ctx)
	h.mu.Lock()
	perms := h.takeAll()
	h.mu.Unlock()
	held, errs := releaseAll(ctx, perms)
	h.q.cfg.observe(core.Event{Kind: core.EventReleased, Name: h.q.name, Weight: h.a.weight, Ctx: ctx})
	if held >= h.need {
		return nil
	}
	err := errors.Join(errs...)
	if errors.Is(err, core.ErrUnavailable) {
		return unavailable("release", h.q.name, fmt.Errorf("%d of %d masters released, %d needed: %w", held, len(perms), h.need, err))
	}
	return fmt.Errorf("%w: %q: %d of %d masters still held the permit, %d needed: %w", core.ErrNotHeld, h.q.name, held, len(perms), h.need, err)
}
