package fair

import (
	"fmt"
	"slices"
	"testing"
)

// A hand is hand distinct queues of the deck, the same on every call.
func TestHandDistinctAndStable(t *testing.T) {
	for i := range 2000 {
		flow := fmt.Sprintf("tenant-%d", i)
		h := Hand(flow, Queues, HandSize)
		if len(h) != HandSize {
			t.Fatalf("%s: %d cards", flow, len(h))
		}
		seen := map[int]bool{}
		for _, q := range h {
			if q < 0 || q >= Queues || seen[q] {
				t.Fatalf("%s: hand %v: card out of the deck or repeated", flow, h)
			}
			seen[q] = true
		}
		if !slices.Equal(h, Hand(flow, Queues, HandSize)) {
			t.Fatalf("%s: hand not deterministic", flow)
		}
	}
	if h := Hand("x", 3, 3); !slices.Equal(slices.Sorted(slices.Values(h)), []int{0, 1, 2}) {
		t.Fatalf("full hand %v", h)
	}
}

// Pinned values: every process, whatever its release, deals the same hand,
// so a change of Hand is a change of the Redis data it indexes.
func TestHandPinned(t *testing.T) {
	got := fmt.Sprint(Hand("", Queues, HandSize), Hand("tenant-a", Queues, HandSize))
	if got != pinnedHands {
		t.Fatalf("hands changed: %s, want %s", got, pinnedHands)
	}
}

const pinnedHands = "[48 62 35 54 42 24 18 60] [54 6 42 58 26 1 24 17]"

// Every queue is dealt about as often: over 64k flows each queue appears in
// 8k hands, within 5 %.
func TestHandUniform(t *testing.T) {
	var n [Queues]int
	const flows = 1 << 16
	for i := range flows {
		for _, q := range Hand(fmt.Sprint(i), Queues, HandSize) {
			n[q]++
		}
	}
	want := flows * HandSize / Queues
	for q, c := range n {
		if c < want*95/100 || c > want*105/100 {
			t.Fatalf("queue %d dealt %d times, want %d ± 5 %%", q, c, want)
		}
	}
}

func TestHandPanicsOnBadSizes(t *testing.T) {
	for _, c := range [][2]int{{4, 0}, {4, 5}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("Hand(_, %d, %d) did not panic", c[0], c[1])
				}
			}()
			Hand("f", c[0], c[1])
		}()
	}
}
