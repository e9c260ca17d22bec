package idle

import (
	"slices"
	"testing"
)

func TestEvictsLeastRecentlyIdleBeyondBound(t *testing.T) {
	var l List[int]
	l.Init(2)
	elems := make([]Elem[int], 4)
	var evicted []int
	push := func(e *Elem[int]) {
		l.Push(e)
		for v, ok := l.Evict(); ok; v, ok = l.Evict() {
			evicted = append(evicted, v)
		}
	}
	for i := range elems {
		elems[i].V = i
	}
	push(&elems[0])
	push(&elems[1])
	l.Remove(&elems[0]) // busy again
	l.Remove(&elems[0]) // not in the list: nothing
	push(&elems[2])
	push(&elems[0]) // idle again: most recent
	push(&elems[3])
	if want := []int{1, 2}; !slices.Equal(evicted, want) {
		t.Fatalf("evicted %v, want %v", evicted, want)
	}
	if l.Len() != 2 {
		t.Fatalf("Len %d, want 2", l.Len())
	}
}

func TestZeroBoundEvictsAtOnce(t *testing.T) {
	var l List[string]
	l.Init(0)
	e := Elem[string]{V: "k"}
	l.Push(&e)
	v, ok := l.Evict()
	if v != "k" || !ok || l.Len() != 0 {
		t.Fatalf("Evict: %q, %v, Len %d; want k, true, 0", v, ok, l.Len())
	}
	if _, ok := l.Evict(); ok {
		t.Fatal("Evict of an empty list returned an entry")
	}
}
