package fair

import (
	"slices"
	"testing"
)

// Items queued while the queue is FIFO join the default flow, in order,
// when it turns fair, and the permits in use count as held.
func TestFairKeepsTheQueuedItems(t *testing.T) {
	var q Queue[int]
	for i := range 3 {
		q.Push(&Item[int]{V: i, Weight: 1}, "", 0)
	}
	q.Fair(nil, nil, 2)
	if n := q.Len(); n != 3 {
		t.Fatalf("Len = %d after Fair, want 3", n)
	}
	if use, waiting, _ := q.Level(0); use != 2 || waiting != 3 {
		t.Fatalf("level 0: %d held, %d waiting; want 2 and 3", use, waiting)
	}
	var got []int
	for it := q.Next(); it != nil; it = q.Next() {
		q.Grant(it)
		got = append(got, it.V)
	}
	if !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("granted %v, want [0 1 2]", got)
	}
}
