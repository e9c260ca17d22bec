package fair

// The shuffle sharding that maps an untrusted flow id onto a fixed set of
// queues, for a backend whose queues are bounded (core/redissem).

// The defaults of a backend with flows, Kubernetes API Priority and
// Fairness's: each priority level has Queues queues, and a flow is dealt a
// hand of HandSize distinct ones, of which it joins the shortest.
const (
	Queues   = 64
	HandSize = 8
)

// Hand returns the hand of flow: hand distinct queue indices in [0,
// queues), the same for the same flow in every process and every release
// of this package. It deals as Kubernetes' shufflesharding.Dealer does
// (each card drawn from the cards left, then relabelled so that the hand
// has no repeat), from a stream of pseudo-random numbers (SplitMix64)
// seeded by the FNV-1a 64 hash of the flow id, so that any deck and hand
// size have enough entropy. It panics unless 0 < hand <= queues.
func Hand(flow string, queues, hand int) []int {
	if hand <= 0 || hand > queues {
		panic("fair: Hand needs 0 < hand <= queues")
	}
	x := fnv1a(flow)
	draws := make([]int, hand)
	for i := range draws {
		x += 0x9e3779b97f4a7c15
		draws[i] = int(mix(x) % uint64(queues-i))
	}
	out := make([]int, hand)
	for i, card := range draws {
		// draws[j] indexes the cards left after j draws: map it back to
		// the full deck by skipping the cards already dealt.
		for j := i; j > 0; j-- {
			if card >= draws[j-1] {
				card++
			}
		}
		out[i] = card
	}
	return out
}

// fnv1a is the 64-bit FNV-1a hash of s.
func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix is SplitMix64's output function.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
