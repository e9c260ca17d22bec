package redissem

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/distsem/distsem/core"
)

// Permits that cross processes: one process acquires, hands the permit's
// ID to another, which adopts it (takes over its lease renewal) or gives it
// back. Each decision is one script, idempotent per id, on the shared
// prelude.
var (
	//go:embed lua/adopt.lua
	luaAdopt string
	//go:embed lua/set_lease.lua
	luaSetLease string

	scriptAdopt    = newScript(scriptSource("", luaAdopt))
	scriptSetLease = newScript(scriptSource("", luaSetLease))
)

// Tombstone codes of ids that crossed processes (see lua/lib.lua).
const (
	tombAdopted    = 3 // the permit was adopted under a new id
	tombReleasedID = 4 // the permit was released by ReleaseID
)

// releaseByID is release.lua's fifth argument for ReleaseID: release a
// holder for whichever process holds it, never a queued waiter.
const releaseByID = "1"

// checkID returns an ErrInvalidArgument error unless id can be a permit
// id: 1 to 64 bytes of [A-Za-z0-9._-] (the ids this package makes).
func checkID(id string) error {
	if id == "" || len(id) > 64 || strings.IndexFunc(id, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}) >= 0 {
		return invalid("%q is not a permit id", id)
	}
	return nil
}

// Adopt takes over a permit of this semaphore held by another process (or
// by this one), given its ID: the returned permit has the same weight,
// token and grant time, a new ID, and this semaphore's default lease TTL
// (WithDefaultLeaseTTL; change it with SetLeaseTTL), which starts now and
// is renewed by this process like any permit it acquired. Lost and Release
// work as for any permit. The count of permits in use does not change.
//
// The original *Permit no longer holds anything: its renewal finds the id
// gone within a third of its lease TTL and closes its Lost channel (its
// observer sees EventLost), and its Release returns ErrNotHeld, as do
// Adopt and ReleaseID of the old id. So a permit is renewed by one process
// only, and a coordinator that hands a permit to a worker stops caring for
// it once the worker has adopted it.
//
// Adopt returns an ErrNotHeld error if id is not held by this semaphore
// (its lease ended, it was released, or it was adopted already), an
// ErrInvalidArgument error if id cannot be a permit id, ErrClosed after
// Close, an error wrapping ctx.Err() if ctx ends first, and an
// ErrUnavailable error if Redis could not be reached (bounded by ctx and
// the operation timeout). After either of the last two the permit may have
// been adopted and given back in the background (the original holder then
// sees Lost), or may still be held by its original holder. The failure
// policy does not apply: Adopt never grants a fallback permit.
func (s *Semaphore) Adopt(ctx context.Context, id string) (*core.Permit, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("redissem: adopt %q: %w", s.name, ctx.Err())
	}
	if s.b.isClosed() {
		return nil, core.ErrClosed
	}
	ttl := s.b.cfg.leaseTTL
	nid := s.b.newID(strings.HasSuffix(id, "_n")) // the note stays with the permit
	for attempt := 0; ; attempt++ {
		sent := time.Now()
		r, err := s.run(ctx, scriptAdopt, s.limit, id, nid, ttl.Milliseconds(), s.b.tombTTL(ttl), s.serverDeadline(ctx, attempt > 0), s.b.cfg.owner)
		if err != nil {
			if !neverSent(err) {
				s.leave(ctx, nid, ttl) // gives back a permit that a lost reply moved
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("redissem: adopt %q: %w", s.name, ctx.Err())
			}
			err = unavailable("adopt", s.name, err)
			s.b.report(s.label, err)
			return nil, err
		}
		switch {
		case r.value == codeGranted && len(r.lost) == 1:
			if s.b.cfg.owner != "" {
				s.ownerStored(sent, 2*ttl)
			}
			return s.adopted(ctx, nid, r.lost[0], ttl, sent)
		case r.value == codeNone:
			return nil, fmt.Errorf("%w: %q has no permit %q", core.ErrNotHeld, s.name, id)
		case r.value == codeLate && attempt == 0 && ctx.Err() == nil:
			continue // the clock estimate was off; corrected from this reply
		case r.value == codeDone && s.b.isClosed():
			return nil, core.ErrClosed
		}
		return nil, unavailable("adopt", s.name, fmt.Errorf("script answered %d", r.value))
	}
}

// adopted makes the permit nid of holder info "weight:token:grant_us",
// whose lease started at most at sent, and tracks it for renewal.
func (s *Semaphore) adopted(ctx context.Context, nid, info string, ttl time.Duration, sent time.Time) (*core.Permit, error) {
	f := strings.Split(info, ":")
	var v [3]int64
	for i := range v {
		if i < len(f) {
			v[i], _ = strconv.ParseInt(f[i], 10, 64)
		}
	}
	if v[0] <= 0 {
		s.leave(ctx, nid, ttl)
		return nil, unavailable("adopt", s.name, fmt.Errorf("malformed holder %q", info))
	}
	p := s.newHolder(nid, v[0], v[1], ttl, v[2])
	b := s.b
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		s.leave(ctx, nid, ttl)
		return nil, core.ErrClosed
	}
	// hold() would start the lease at the grant time; an adopted lease
	// was renewed by the script, sent at the earliest at sent.
	b.track(s, ttl).held[p] = sent.Add(ttl)
	b.mu.Unlock()
	b.cfg.observe(core.Event{Kind: core.EventAcquired, Name: s.label, Weight: p.weight, Ctx: ctx})
	return p.p, nil
}

// ReleaseID gives back the permit id of this semaphore, whichever process
// holds it, and passes it on to the head of the queue, as Release does.
// The holder's *Permit then sees Lost at its next renewal (within a third
// of its lease TTL), and its Release returns ErrNotHeld. A queued
// Acquire's id is never touched.
//
// It returns nil once the permit is released, also when a retry finds that
// an earlier ReleaseID of id did it (for a while after: up to the lease
// TTL); an ErrNotHeld error if id holds nothing (its lease ended, its
// holder released it, or it was adopted under a new id); an
// ErrInvalidArgument error if id cannot be a permit id; and an
// ErrUnavailable error if Redis could not be reached, within ctx and the
// operation timeout. After ErrUnavailable the permit may or may not have
// been released; ReleaseID is safe to retry.
func (s *Semaphore) ReleaseID(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	r, err := s.run(ctx, scriptRelease, s.limit, id, s.b.tombTTL(s.b.cfg.leaseTTL), releaseByID)
	if err != nil {
		err = unavailable("release id", s.name, err)
		s.b.report(s.label, err)
		return err
	}
	if r.code != codeGranted && r.code != tombReleasedID {
		return fmt.Errorf("%w: %q has no permit %q", core.ErrNotHeld, s.name, id)
	}
	return nil
}

// setLease runs the set-lease script for p, which this semaphore tracks.
// The new TTL is stored before the script runs, so every renewal sent from
// then on carries it, and a renewal is forced right after, so that one
// that carried the old TTL and landed after the script is overridden.
func (s *Semaphore) setLease(ctx context.Context, p *holder, ttl time.Duration) error {
	b := s.b
	b.mu.Lock()
	if t := b.sems[s]; t == nil || !tracked(t, p) {
		b.mu.Unlock()
		return fmt.Errorf("%w: %q token %d: lease lost", core.ErrNotHeld, s.name, p.token)
	}
	atomic.StoreInt64(&p.ttl, ttl.Milliseconds())
	b.mu.Unlock()

	sent := time.Now()
	r, err := s.run(ctx, scriptSetLease, s.limit, p.id, ttl.Milliseconds())
	b.mu.Lock()
	if t := b.sems[s]; t != nil {
		if tracked(t, p) {
			if err == nil && r.code == codeGranted {
				t.held[p] = sent.Add(ttl)
				p.endUS = r.nowUS + ttl.Microseconds()
			}
			t.nextBeat = time.Time{}
			b.poke()
		}
	}
	b.mu.Unlock()
	switch {
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("redissem: set lease %q: %w", s.name, ctx.Err())
	case err != nil:
		err = unavailable("set lease", s.name, err)
		s.b.report(s.label, err)
		return err
	case r.code != codeGranted:
		return fmt.Errorf("%w: %q token %d: lease lost", core.ErrNotHeld, s.name, p.token)
	}
	return nil
}

func tracked(t *semTrack, p *holder) bool {
	_, ok := t.held[p]
	return ok
}
