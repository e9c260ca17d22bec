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

// Weight follows the items queued through pushes, removals, grants and
// the switch to fair queuing.
func TestWeightCountsTheQueuedItems(t *testing.T) {
	var q Queue[int]
	items := make([]*Item[int], 4)
	for i := range items {
		items[i] = &Item[int]{V: i, Weight: int64(i + 1)}
		q.Push(items[i], "", 0)
	}
	check := func(when string, want int64) {
		t.Helper()
		if w := q.Weight(); w != want {
			t.Fatalf("%s: Weight = %d, want %d", when, w, want)
		}
	}
	check("after 4 pushes", 10)
	q.Grant(q.Next()) // weight 1
	check("after a FIFO grant", 9)
	q.Remove(items[2]) // weight 3
	check("after a FIFO removal", 6)
	q.Fair(nil, nil, 0)
	check("after Fair", 6)
	q.Push(&Item[int]{V: 4, Weight: 5}, "b", 0)
	check("after a fair push", 11)
	q.Remove(items[3]) // weight 4
	check("after a fair removal", 7)
	for it := q.Next(); it != nil; it = q.Next() {
		q.Grant(it)
	}
	check("after granting the rest", 0)
}
