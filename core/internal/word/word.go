// Package word is the layout of a Local's state word. With nobody queued,
// Acquire and Release change the word with one compare-and-swap and take
// no lock; the same swap also counts the grant, which gives the fencing
// token without a second atomic operation.
//
//	unfrozen: seq<<seqShift | (free+FreeBias)<<1      (Frozen bit clear)
//	frozen:   Frozen; the Local's fields hold the values (under its lock)
//
// free is limit − permits in use (negative after a lowered limit), seq the
// number of grants so far. A Local freezes the word before it changes
// anything under its lock, and thaws it afterwards only if the values Fit:
// a limit below FreeBias (2^19 = 524 288) and fewer than SeqMax grants.
// Otherwise the word stays frozen and every Acquire and Release takes the
// lock, as a mutex-based semaphore does. Because seq only grows while the
// word is unfrozen, a swap that succeeds saw every grant and release
// before it: no ABA.
package word

const (
	// Frozen is the word of a frozen state, and its bit in any word.
	Frozen = 1
	// FreeBias bounds the limits and free counts that the word holds.
	FreeBias = 1 << (freeBits - 1)
	// SeqMax bounds the grants that the word counts.
	SeqMax = 1<<(64-seqShift) - 1

	freeBits = 20
	freeMask = 1<<freeBits - 1
	seqShift = 1 + freeBits
)

// Pack returns the unfrozen word of free and seq.
func Pack(free, seq int64) uint64 { return uint64(seq)<<seqShift | uint64(free+FreeBias)<<1 }

// Unpack returns the free count and the grants of an unfrozen word.
func Unpack(w uint64) (free, seq int64) {
	return int64(w>>1&freeMask) - FreeBias, int64(w >> seqShift)
}

// Release returns the unfrozen word w with n permits given back.
func Release(w uint64, n int64) uint64 { return w + uint64(n)<<1 }

// Fits reports whether a state of limit, free and seq fits the word.
func Fits(limit, free, seq int64) bool {
	return limit < FreeBias && free >= -FreeBias && seq < SeqMax
}
