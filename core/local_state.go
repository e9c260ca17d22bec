package core

// Local's state word. With nobody queued, Acquire and Release change it
// with one compare-and-swap and take no lock; the same swap also counts the
// grant, which gives the fencing token without a second atomic operation.
//
//	unfrozen: seq<<seqShift | (free+freeBias)<<1      (slow bit clear)
//	frozen:   slowBit; s.free and s.seq hold the values (under s.mu)
//
// free is limit − permits in use (negative after a lowered limit), seq the
// number of grants so far, and a token is tokBase + seq. A holder of s.mu
// freezes the word before it changes anything, and thaws it when it is done
// if nobody is queued, s is open and was never inspected (Inspect), and
// the values fit: a limit below
// freeBias (2^19 = 524 288) and fewer than 2^43 grants. Otherwise the word
// stays frozen and every Acquire and Release takes s.mu, as a
// mutex-based semaphore does. Because seq only grows while the word is
// unfrozen, a swap that succeeds saw every grant and release before it: no
// ABA.
const (
	slowBit  = 1
	freeBits = 20
	freeBias = 1 << (freeBits - 1)
	freeMask = 1<<freeBits - 1
	seqShift = 1 + freeBits
	seqMax   = 1<<(64-seqShift) - 1
)

func packState(free, seq int64) uint64 {
	return uint64(seq)<<seqShift | uint64(free+freeBias)<<1
}

func unpackState(st uint64) (free, seq int64) {
	return int64(st>>1&freeMask) - freeBias, int64(st >> seqShift)
}

// freeze makes s.free and s.seq hold the state and stops the lock-free
// paths from changing it. s.mu must be held.
func (s *Local) freeze() {
	for {
		st := s.state.Load()
		if st&slowBit != 0 {
			return // already frozen: s.free and s.seq hold the state
		}
		if s.state.CompareAndSwap(st, slowBit) {
			s.free, s.seq = unpackState(st)
			return
		}
	}
}

// thaw hands the state back to the lock-free paths, if nobody is queued,
// s is open and was never inspected, and the values fit the word;
// otherwise it stays frozen. s.mu must be held, and s frozen.
func (s *Local) thaw() {
	if s.waiters.Len() == 0 && s.lvl == nil && !s.closed && s.held == nil && s.limit < freeBias && s.free >= -freeBias && s.seq < seqMax {
		s.state.Store(packState(s.free, s.seq))
	}
}

// nextToken counts a grant made under s.mu and returns its token. s.mu
// must be held, and s frozen.
func (s *Local) nextToken() int64 {
	s.seq++
	return s.tokBase.Load() + s.seq
}

// freeNow returns the free permits. s.mu must be held.
func (s *Local) freeNow() int64 {
	if st := s.state.Load(); st&slowBit == 0 {
		free, _ := unpackState(st)
		return free
	}
	return s.free
}
