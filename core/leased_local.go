package core

// The in-process side of leased shares: a Local whose limit is the
// semaphore's global limit (so weights are checked as in the default mode)
// and of which limit − share permits are held by a reserve, so that at
// most share permits are granted to callers. Growing the share releases
// part of the reserve (queued waiters are granted in FIFO order at once);
// shrinking it takes more reserve, which may push the count above the
// limit: no one is then admitted until enough holders release. A held
// permit is never revoked.

// shareLocal is the local semaphore and its reserve; reserve is guarded by
// loc.mu.
type shareLocal struct {
	loc     *Local
	reserve int64
}

func newShareLocal(name string, limit int64, cfg config) *shareLocal {
	cfg.reentrant = false // handled by leased.acquire
	loc := newLocal(name, limit, cfg)
	loc.mu.Lock()
	loc.freeze()
	loc.free = 0         // no share yet: every permit is in the reserve
	loc.tokBase.Store(0) // set from the share epoch at registration
	loc.thaw()
	loc.mu.Unlock()
	return &shareLocal{loc: loc, reserve: limit}
}

// set makes limit the weight limit and lets at most share permits be in
// use by callers. A queued request heavier than a lowered limit fails with
// an ErrInvalidArgument error, as Local.SetLimit does.
func (l *shareLocal) set(limit, share int64) {
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

// localState is what the local semaphore holds.
type localState struct {
	inUse int64 // permits held by callers
	waitW int64 // weight queued
	waitN int64 // callers queued
	head  int64 // the weight of the head waiter, 0 if none
	share int64 // the permits callers may hold
	limit int64
}

func (l *shareLocal) state() localState {
	s := l.loc
	s.mu.Lock()
	defer s.mu.Unlock()
	inUse := s.limit - s.freeNow() - l.reserve
	st := localState{inUse: inUse, waitN: int64(s.waiters.n), share: s.limit - l.reserve, limit: s.limit}
	for w := s.waiters.head; w != nil; w = w.next {
		st.waitW += w.n
	}
	if w := s.waiters.head; w != nil {
		st.head = w.n
	}
	return st
}

// raiseTokens makes the next token at least base + 1.
func (l *shareLocal) raiseTokens(base int64) {
	s := l.loc
	s.mu.Lock()
	s.freeze()
	if s.tokBase.Load()+s.seq < base {
		s.tokBase.Store(base - s.seq)
	}
	s.thaw()
	s.mu.Unlock()
}
