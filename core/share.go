package core

import "context"

// Share is the in-process side of a backend that leases a share of a
// fleet-wide limit to each process (such as the Redis backend's leased
// mode): a FIFO in-process semaphore, like Local, whose weights are
// checked against the fleet-wide limit but of which at most share permits
// are granted to callers. Growing the share grants queued callers in FIFO
// order at once; shrinking it below the permits in use admits no one
// until enough holders release: a held permit is never revoked. It starts
// with a share of 0 and tokens from 1.
type Share struct {
	loc     *Local
	reserve int64 // limit − share permits held back; guarded by loc.mu
}

var _ LimitSemaphore = (*Local)(nil)

// NewShare returns a Share of limit with a share of 0, named name in
// events and errors. It panics as NewLocal does.
func NewShare(name string, limit int64, opts ...Option) *Share {
	cfg := buildConfig(opts)
	cfg.refuse("NewShare", optsLocal&^optFairness)
	return newShare(name, limit, cfg)
}

func newShare(name string, limit int64, cfg config) *Share {
	loc := newLocal(name, limit, cfg)
	loc.mu.Lock()
	loc.freeze()
	loc.free = 0         // no share yet: every permit is in the reserve
	loc.tokBase.Store(0) // set from the share epoch at registration
	loc.thaw()
	loc.mu.Unlock()
	return &Share{loc: loc, reserve: limit}
}

// Acquire is Local.Acquire within the share.
func (l *Share) Acquire(ctx context.Context, opts ...AcquireOption) (*Permit, error) {
	return l.loc.Acquire(ctx, opts...)
}

// TryAcquire is Local.TryAcquire within the share.
func (l *Share) TryAcquire(ctx context.Context, opts ...AcquireOption) (*Permit, error) {
	return l.loc.TryAcquire(ctx, opts...)
}

// Close is Local.Close.
func (l *Share) Close() error { return l.loc.Close() }

// Set makes limit the weight limit and lets at most share permits be in
// use by callers. A queued request heavier than a lowered limit fails with
// an ErrInvalidArgument error, as Local.SetLimit does.
func (l *Share) Set(limit, share int64) {
	s := l.loc
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeze()
	if limit != s.limit {
		s.free += limit - s.limit
		s.limit = limit
		s.failHeavier(limit)
	}
	share = max(0, min(share, limit))
	reserve := limit - share
	s.free -= reserve - l.reserve
	l.reserve = reserve
	s.settle()
}

// ShareState is what a Share holds.
type ShareState struct {
	InUse int64 // permits held by callers
	WaitW int64 // weight queued
	WaitN int64 // callers queued
	Head  int64 // the weight of the head waiter, 0 if none
	Share int64 // the permits callers may hold
	Limit int64
}

// State returns what l holds now.
func (l *Share) State() ShareState {
	s := l.loc
	s.mu.Lock()
	defer s.mu.Unlock()
	inUse := s.limit - s.freeNow() - l.reserve
	st := ShareState{InUse: inUse, WaitN: int64(s.waiters.Len()), Share: s.limit - l.reserve, Limit: s.limit}
	for _, w := range s.queuedWaiters() {
		st.WaitW += w.p.weight
	}
	if it := s.waiters.Next(); it != nil {
		st.Head = it.Weight
	}
	return st
}

// RaiseTokens makes the next token at least base + 1.
func (l *Share) RaiseTokens(base int64) {
	s := l.loc
	s.mu.Lock()
	s.freeze()
	if s.tokBase.Load()+s.seq < base {
		s.tokBase.Store(base - s.seq)
	}
	s.thaw()
	s.mu.Unlock()
}

// Inspect is Local.Inspect of the callers of this process: the holders of
// permits of the share and the callers queued for them.
func (l *Share) Inspect(ctx context.Context, limit int) (Snapshot, error) {
	return l.loc.Inspect(ctx, limit)
}
