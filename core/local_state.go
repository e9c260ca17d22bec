package core

import "github.com/distsem/distsem/core/internal/word"

// Local's state word: see core/internal/word for its layout.

// freeze makes s.free and s.seq hold the state and stops the lock-free
// paths from changing it. s.mu must be held.
func (s *Local) freeze() {
	for {
		st := s.state.Load()
		if st&word.Frozen != 0 {
			return // already frozen: s.free and s.seq hold the state
		}
		if s.state.CompareAndSwap(st, word.Frozen) {
			s.free, s.seq = word.Unpack(st)
			return
		}
	}
}

// thaw hands the state back to the lock-free paths, if nobody is queued,
// s is open and was never inspected, and the values fit the word;
// otherwise it stays frozen. s.mu must be held, and s frozen.
func (s *Local) thaw() {
	if s.waiters.Len() == 0 && s.lvl == nil && !s.closed && s.held == nil && word.Fits(s.limit, s.free, s.seq) {
		s.state.Store(word.Pack(s.free, s.seq))
	}
}

// nextToken counts a grant made under s.mu and returns its token. s.mu
// must be held, and s frozen.
func (s *Local) nextToken() int64 {
	s.seq++
	return s.tokBase.Load() + s.seq
}

// grantsNow returns the grants made so far. s.mu must be held.
func (s *Local) grantsNow() int64 {
	if st := s.state.Load(); st&word.Frozen == 0 {
		_, seq := word.Unpack(st)
		return seq
	}
	return s.seq
}

// freeNow returns the free permits. s.mu must be held.
func (s *Local) freeNow() int64 {
	if st := s.state.Load(); st&word.Frozen == 0 {
		free, _ := word.Unpack(st)
		return free
	}
	return s.free
}
