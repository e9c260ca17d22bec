package redissem

import (
	"context"
	"slices"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

// holder is this process's side of a permit that a Semaphore granted:
// what Release and the renewal loop need. The *core.Permit that Acquire
// returns is made around it by backend.NewPermit, with the holder as its
// backend.Releaser.
type holder struct {
	s       *Semaphore
	p       *core.Permit // the permit handed out, made around h
	id      string       // the holder's member in Redis
	weight  int64
	token   int64
	ttl     int64 // lease in milliseconds; SetLeaseTTL stores it atomically under b.mu
	grantUS int64 // Redis TIME of the grant, microseconds
	level   int   // the priority level it was granted at (core.WithLevel)
	queueUS int64 // Redis TIME at which the request queued; 0 if it did not
	// endUS is the lease's end in Redis TIME (µs) as last granted or
	// renewed, 0 if unknown; guarded by b.mu. A re-assertion after a
	// failover makes the holder again only until then (redis_reassert.go).
	endUS int64
	lost  chan struct{} // closed when the lease could not be kept
	// ctx is the acquiring call's, whose values (not its cancellation:
	// reportLost) EventLost carries; nil for an adopted permit.
	ctx context.Context
}

// lose reports each holder of gone lost with err, once it is out of its
// semaphore's held set: first EventLost, so that an observer sees it while
// the permit's caller still waits on Lost (and, say, its trace span is
// open), then Lost. It must not be called with b.mu held: an observer may
// call back into the semaphore.
func lose(gone []*holder, err error) {
	for _, h := range gone {
		h.s.b.cfg.reportLost(h.ctx, h.s.label, h.weight, err, h.lost)
	}
}

// newHolder returns the holder of a grant and the permit made around it.
func (s *Semaphore) newHolder(id string, weight, token int64, ttl time.Duration, grantUS int64) *holder {
	h := &holder{s: s, id: id, weight: weight, token: token, ttl: ttl.Milliseconds(), grantUS: grantUS, lost: make(chan struct{})}
	if grantUS != 0 {
		h.endUS = grantUS + ttl.Microseconds()
	}
	g := backend.Grant{Weight: weight, Token: token, Lost: h.lost, ID: id}
	if grantUS != 0 {
		g.GrantedAt = time.UnixMicro(grantUS)
	}
	h.p = backend.NewPermit(h, g)
	return h
}

// ReleasePermit gives the permit back; see Semaphore.release.
func (h *holder) ReleasePermit(ctx context.Context, _ *core.Permit) error { return h.s.release(ctx, h) }

// SetPermitLease changes the permit's lease; see Semaphore.setLease.
func (h *holder) SetPermitLease(ctx context.Context, _ *core.Permit, ttl time.Duration) error {
	return h.s.setLease(ctx, h, ttl)
}

// ttlDuration is the lease in force.
func (h *holder) ttlDuration() time.Duration { return time.Duration(h.ttl) * time.Millisecond }

// acquireSpec is what one Acquire or TryAcquire asks for.
type acquireSpec struct {
	weight int64
	ttl    time.Duration
	ttlSet bool   // core.WithLeaseTTL was given
	queued func() // called when the waiter has queued in Redis (Quorum)
	note   string // core.WithNote
	flow   string // core.WithFlow
	level  int    // core.WithLevel
}

// refuseFlow returns an ErrInvalidArgument error naming what if the call
// asks for a flow or a priority level, which what does not have.
func (a acquireSpec) refuseFlow(what string) error {
	return backend.AcquireSpec{Flow: a.flow, Level: a.level}.RefuseFlow(what)
}

func buildAcquire(def time.Duration, opts []core.AcquireOption) (acquireSpec, error) {
	a, err := backend.ResolveAcquire(def, opts...)
	return acquireSpec{weight: a.Weight, ttl: a.LeaseTTL, ttlSet: a.LeaseTTLGiven, note: a.Note, flow: a.Flow, level: a.Level}, err
}

// fallbackPermit wraps a permit of the fail-local policy's Local: token 0,
// never mistaken for a Redis token.
type fallbackPermit struct{ inner *core.Permit }

func (f fallbackPermit) ReleasePermit(ctx context.Context, _ *core.Permit) error {
	return f.inner.Release(ctx)
}

// fallback applies a failure policy that grants (FailOpen, FailLocal):
// the permit it grants, or nil and err if the policy fails closed.
func fallback(ctx context.Context, policy core.FailurePolicy, loc *core.Local, try bool, opts []core.AcquireOption, weight int64, err error) (*core.Permit, error) {
	switch {
	case policy.Open():
		return backend.NewPermit(nil, backend.Grant{Weight: weight}), nil
	case loc != nil:
		var p *core.Permit
		if try {
			p, err = loc.TryAcquire(ctx, opts...)
		} else {
			p, err = loc.Acquire(ctx, opts...)
		}
		if err != nil {
			return nil, err
		}
		return backend.NewPermit(fallbackPermit{p}, backend.Grant{Weight: p.Weight()}), nil
	}
	return nil, err
}

// newFallback returns the Local of a fail-local policy, or nil; it has
// the configured Fairness (WithFairness), not one stored in Redis.
func newFallback(name string, cfg config) *core.Local {
	if k := cfg.policy.LocalLimit(); k > 0 {
		opts := []core.Option{core.WithName(name), core.WithObserver(cfg.observer)}
		if cfg.fairSet {
			// The same levels and weights, the reserves honoured level by
			// level up to the local limit, as the Redis semaphore does
			// under a lowered limit.
			f := cfg.fair
			f.Reserves = slices.Clone(f.Reserves)
			left := k
			for i, r := range f.Reserves {
				f.Reserves[i] = min(r, left)
				left -= f.Reserves[i]
			}
			opts = append(opts, core.WithFairness(f))
		}
		return core.NewLocal(k, opts...)
	}
	return nil
}
