package redissem

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Holders re-asserted after a switch.
//
// Redis replicates asynchronously: a failover can promote a replica that
// lacks the grants of the last moments. The permits this process holds are
// then unknown to the new primary, which may grant them again. So when the
// process sees the primary change (the follower remakes the subscription:
// redis_follow.go), it re-asserts every live permit it holds on the new
// primary (lua/reassert.lua): a holder that the primary lacks is made
// again, with its id, weight, token and grant time, until its lease's end
// in Redis TIME as last granted or renewed (a lease that ended there is
// not made again, whatever this process's clock says), unless
// that would take more than the limit, because the new primary granted
// those permits meanwhile. A permit that cannot be re-asserted is lost:
// Permit.Lost is closed, the observer gets EventLost, and WithOnError gets
// an error wrapping errReassertOver. A heartbeat that finds live holders of
// this process missing (a switch the follower did not see) re-asserts them
// before it counts them lost.
//
// New grants in this process wait, within their ctx, until the re-assertion
// that follows a detected switch is done (at most the operation timeout
// for the subscription and one for the re-assertion): otherwise this
// process's own new grants could take the permits its holders need back.
// Other processes are not held back: their grants are what the limit check
// of the re-assertion is for.

// errReassertOver is the cause reported for a permit that could not be
// re-asserted without exceeding the limit.
var errReassertOver = errors.New("redissem: a permit held before a failover could not be re-asserted on the new primary without exceeding the limit")

// gate is closed while new grants may go ahead; a switch replaces it by an
// open one (the re-assertion's), closed when the re-assertion ends.
type gate struct{ ch atomic.Pointer[chan struct{}] }

// wait returns nil once no re-assertion is in progress, or ctx's error.
func (g *gate) wait(ctx context.Context) error {
	p := g.ch.Load()
	if p == nil {
		return nil
	}
	select {
	case <-*p:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shut holds new grants back until the returned function is called.
func (g *gate) shut() (open func()) {
	ch := make(chan struct{})
	g.ch.Store(&ch)
	return func() {
		g.ch.CompareAndSwap(&ch, nil)
		close(ch)
	}
}

// holding reports whether this process holds a permit of any semaphore.
func (b *redisBackend) holding() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.sems {
		if len(t.held) > 0 {
			return true
		}
	}
	return false
}

// reassertAll re-asserts every live permit of this process, each semaphore
// in turn, and marks lost those that cannot be.
func (b *redisBackend) reassertAll() {
	b.mu.Lock()
	jobs := make(map[*Semaphore][]*holder, len(b.sems))
	for s, t := range b.sems {
		for p := range t.held {
			jobs[s] = append(jobs[s], p)
		}
	}
	b.mu.Unlock()
	for s, held := range jobs {
		for len(held) > 0 {
			n := min(len(held), heartbeatBatch)
			lost, err := s.reassert(held[:n])
			if err == nil {
				s.markLost(held[:n], lost)
			}
			held = held[n:]
		}
	}
}

// reassert runs lua/reassert.lua for held (each until its lease's end in
// Redis TIME as last granted or renewed), and returns the ids that are not holders on the primary
// afterwards. It reports the failures and the permits refused for the
// limit.
func (s *Semaphore) reassert(held []*holder) (map[string]bool, error) {
	b := s.b
	args := make([]any, 0, 6*len(held))
	b.mu.Lock()
	t := b.sems[s]
	for _, p := range held {
		var end int64 // ms, Redis TIME; 0: not held any more
		if t != nil && tracked(t, p) {
			end = p.endUS / 1000
		}
		args = append(args, p.id, p.weight, p.token, p.grantUS, end, p.level)
	}
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.fault.opTimeout)
	defer cancel()
	r, err := s.runScript(ctx, scriptReassert, false, s.limit, args...)
	if err != nil {
		b.report(s.label, unavailable("re-assert", s.name, err))
		return nil, err
	}
	if r.value > 0 {
		b.report(s.label, fmt.Errorf("%w: %d of %q", errReassertOver, r.value, s.name))
	}
	lost := make(map[string]bool, len(r.lost))
	for _, id := range r.lost {
		lost[id] = true
	}
	return lost, nil
}

// markLost ends the permits of held whose ids are in lost: not held on the
// primary.
func (s *Semaphore) markLost(held []*holder, lost map[string]bool) {
	if len(lost) == 0 {
		return
	}
	var gone []*holder
	s.b.mu.Lock()
	if t := s.b.sems[s]; t != nil {
		for _, p := range held {
			if _, ok := t.held[p]; ok && lost[p.id] {
				delete(t.held, p)
				gone = append(gone, p)
			}
		}
	}
	s.b.mu.Unlock()
	lose(gone, nil)
}

// reassertLost re-asserts the holders of held that a heartbeat found
// missing (lost) while their lease, as this process counts it, is still
// live (the primary changed unseen), and returns the ids still lost.
func (s *Semaphore) reassertLost(held []*holder, lost []string) []string {
	ids := make(map[string]bool, len(lost))
	for _, id := range lost {
		ids[id] = true
	}
	now := time.Now()
	var live []*holder
	s.b.mu.Lock()
	if t := s.b.sems[s]; t != nil {
		for _, p := range held {
			if end, ok := t.held[p]; ok && ids[p.id] && end.After(now) {
				live = append(live, p)
			}
		}
	}
	s.b.mu.Unlock()
	if len(live) == 0 {
		return lost
	}
	still, err := s.reassert(live)
	if err != nil {
		return lost
	}
	out := lost[:0:0]
	for _, id := range lost {
		kept := false
		for _, p := range live {
			if p.id == id && !still[id] {
				kept = true
				break
			}
		}
		if !kept {
			out = append(out, id)
		}
	}
	return out
}
