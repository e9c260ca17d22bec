package consul

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distsem/distsem/core"
)

// sessions owns the one Consul session of a Semaphore: every contender key
// of this process (holders and waiters) is locked by it, so when the
// process dies its keys are deleted when the session's TTL runs out, and
// the permits come back. One loop renews it every TTL/3.
type sessions struct {
	api *api.Session
	raw *api.Raw
	s   *Semaphore
	ttl time.Duration

	createMu sync.Mutex // serialises session creation
	mu       sync.Mutex
	id       string // "" until created, or after it was lost
	lastOK   time.Time
	held     map[*holder]struct{} // permits to mark lost if the session goes
	waiters  map[*waitReg]struct{}
	closed   bool
	stopLoop context.CancelFunc // nil until the loop runs
	wg       sync.WaitGroup
}

type waitReg struct{ cancel context.CancelCauseFunc }

func newSessions(c *api.Client, s *Semaphore) *sessions {
	return &sessions{api: c.Session(), raw: c.Raw(), s: s, ttl: s.cfg.LeaseTTL, held: make(map[*holder]struct{}), waiters: make(map[*waitReg]struct{})}
}

// get returns the session, creating it (and starting the renewal loop) if
// there is none. It returns ErrClosed after Close.
func (m *sessions) get(ctx context.Context) (string, error) {
	if id, err := m.current(); id != "" || err != nil {
		return id, err
	}
	m.createMu.Lock()
	defer m.createMu.Unlock()
	if id, err := m.current(); id != "" || err != nil {
		return id, err
	}
	// LockDelay 0: see the package documentation. api.Session.Create omits
	// a zero LockDelay, which Consul reads as its default of 15s, so the
	// body is written here.
	var out struct{ ID string }
	_, err := m.raw.Write("/v1/session/create", map[string]any{"Name": "distsem " + m.s.name, "TTL": m.ttl.String(),
		"Behavior": api.SessionBehaviorDelete, "LockDelay": "0s"}, &out, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		return "", err
	}
	id := out.ID
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		go m.destroy(id)
		return "", core.ErrClosed
	}
	m.id, m.lastOK = id, time.Now()
	if m.stopLoop == nil {
		ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		m.stopLoop = cancel
		m.wg.Add(1)
		go m.loop(ctx)
	}
	return id, nil
}

func (m *sessions) current() (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", core.ErrClosed
	}
	return m.id, nil
}

// loop renews the session every TTL/3 until Close. A session that Consul
// no longer knows, or that could not be renewed for a whole TTL, is lost:
// its permits' Lost channels are closed and the next Acquire creates a new
// session.
func (m *sessions) loop(ctx context.Context) {
	defer m.wg.Done()
	t := time.NewTicker(m.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		id, _ := m.current()
		if id == "" {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, m.ttl/3)
		e, _, err := m.api.Renew(id, (&api.WriteOptions{}).WithContext(rctx))
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && e != nil:
			m.mu.Lock()
			m.lastOK = time.Now()
			m.mu.Unlock()
		case err == nil:
			m.s.report(fmt.Errorf("%w: session of %q expired", core.ErrNotHeld, m.s.name))
			m.invalidate(id)
		default:
			m.s.report(unavailable("renew session", m.s.name, err))
			m.mu.Lock()
			expired := time.Since(m.lastOK) > m.ttl
			m.mu.Unlock()
			if expired {
				m.invalidate(id)
			}
		}
	}
}

// invalidate forgets session id (if it is still the current one) and
// marks the permits held under it lost.
func (m *sessions) invalidate(id string) {
	m.mu.Lock()
	if m.id == id {
		m.id = ""
	}
	var lost []*holder
	for h := range m.held {
		if h.sid == id {
			delete(m.held, h)
			lost = append(lost, h)
		}
	}
	m.mu.Unlock()
	m.markLost(lost, core.ErrNotHeld)
}

// markLost reports each of lost, no longer in m.held, lost with err: first
// the EventLost, so that an observer sees it while the permit's caller
// still waits on Lost (and, say, its trace span is open), then Lost.
func (m *sessions) markLost(lost []*holder, err error) {
	for _, h := range lost {
		m.s.observe(core.Event{Kind: core.EventLost, Name: m.s.name, Weight: h.weight, Err: err, Ctx: h.lostCtx()})
		close(h.lost)
	}
}

// addWaiter returns ctx merged with Close: Close cancels it with cause
// ErrClosed. done must be called when the wait ends.
func (m *sessions) addWaiter(ctx context.Context) (context.Context, func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, nil, core.ErrClosed
	}
	ctx, cancel := context.WithCancelCause(ctx)
	r := &waitReg{cancel: cancel}
	m.waiters[r] = struct{}{}
	return ctx, func() {
		m.mu.Lock()
		delete(m.waiters, r)
		m.mu.Unlock()
		cancel(nil)
	}, nil
}

// hold tracks a granted permit. After Close, or if its session was lost
// meanwhile, it is marked lost at once.
func (m *sessions) hold(h *holder) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.id != h.sid {
		close(h.lost)
		return
	}
	m.held[h] = struct{}{}
}

func (m *sessions) unhold(h *holder) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.held, h)
}

func (m *sessions) close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	for r := range m.waiters {
		r.cancel(core.ErrClosed)
	}
	var lost []*holder
	for h := range m.held {
		lost = append(lost, h)
	}
	clear(m.held)
	id, stop := m.id, m.stopLoop
	m.mu.Unlock()
	m.markLost(lost, core.ErrClosed)
	if stop != nil {
		stop()
	}
	m.wg.Wait()
	if id != "" && len(lost) == 0 {
		m.destroy(id)
	}
}

// destroy ends session id: Consul deletes the keys it still locks.
func (m *sessions) destroy(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), m.ttl)
	defer cancel()
	if _, err := m.api.Destroy(id, (&api.WriteOptions{}).WithContext(ctx)); err != nil {
		m.s.report(unavailable("destroy session", m.s.name, err))
	}
}

// holder is the backend side of a permit.
type holder struct {
	s      *Semaphore
	id     string // contender id
	sid    string // the session that locks its key
	weight int64
	lost   chan struct{}
	ctx    context.Context // the acquiring call's, for EventLost (lostCtx)
}

// lostCtx is the ctx of h's EventLost: the acquiring call's values
// without its cancellation.
func (h *holder) lostCtx() context.Context { return context.WithoutCancel(h.ctx) }

// ReleasePermit implements backend.Releaser: it removes the holder from .lock,
// deletes its key and hands the capacity to the head of the queue in one
// transaction. A ctx already done is replaced by one bounded by the lease
// TTL, because a request ctx is often over by release time.
func (h *holder) ReleasePermit(ctx context.Context, _ *core.Permit) error {
	s := h.s
	s.sess.unhold(h)
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), s.sess.ttl)
		defer cancel()
	}
	held, err := s.release(ctx, h.id)
	if err != nil {
		return s.report(unavailable("release", s.name, err))
	}
	s.observe(core.Event{Kind: core.EventReleased, Name: s.name, Weight: h.weight, Ctx: ctx})
	if !held {
		return fmt.Errorf("%w: %q: the session of the permit ended", core.ErrNotHeld, s.name)
	}
	return nil
}
