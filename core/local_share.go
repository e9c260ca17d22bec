package core

// A Local can be the in-process side of a backend that leases a share of
// a fleet-wide limit to each process (core/backend.Share): its weights are
// checked against the fleet-wide limit, but reserve of its permits are
// held back from callers.

// newShare returns a Local of limit with a share of 0 and tokens from 1.
func newShare(name string, limit int64, cfg config) *Local {
	s := newLocal(name, limit, cfg)
	s.mu.Lock()
	s.freeze()
	s.free = 0         // no share yet: every permit is in the reserve
	s.tokBase.Store(0) // set from the share epoch at registration
	s.reserve = limit
	s.thaw()
	s.mu.Unlock()
	return s
}

// setShare makes limit the weight limit and lets at most share permits be
// in use by callers.
func (s *Local) setShare(limit, share int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeze()
	if limit != s.limit {
		s.setLimitLocked(limit)
	}
	share = max(0, min(share, limit))
	reserve := limit - share
	s.free -= reserve - s.reserve
	s.reserve = reserve
	s.settle()
}

// shareState returns the permits held by callers, the weight and number
// of callers queued, the head waiter's weight (0 if none), the share, the
// limit and the grants made so far.
func (s *Local) shareState() (inUse, waitW, waitN, head, share, limit, grants int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	waitW = s.waiters.Weight()
	if it := s.waiters.Next(); it != nil {
		head = it.Weight
	}
	return s.limit - s.freeNow() - s.reserve, waitW, int64(s.waiters.Len()), head, s.limit - s.reserve, s.limit, s.grantsNow()
}

// raiseTokens makes the next token at least base + 1.
func (s *Local) raiseTokens(base int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeze()
	if s.tokBase.Load()+s.seq < base {
		s.tokBase.Store(base - s.seq)
	}
	s.thaw()
}
