package fair

import (
	"fmt"
	"testing"
)

// grantAll grants n items one at a time, as a semaphore of limit 1 would,
// and returns the flows in grant order.
func grantAll(s *Sched[int], n int) []string {
	var got []string
	for range n {
		it := s.Next()
		if it == nil {
			break
		}
		s.Grant(it)
		s.Released(it.Level, it.Weight)
		got = append(got, it.Flow())
	}
	return got
}

func TestWeightedSharesOfBackloggedFlows(t *testing.T) {
	s := &Sched[int]{Weights: map[string]int64{"b": 2, "c": 4}}
	for i := range 1000 {
		for _, f := range []string{"a", "b", "c"} {
			s.Push(&Item[int]{V: i, Weight: 1}, f, 0)
		}
	}
	count := map[string]int{}
	for _, f := range grantAll(s, 700) {
		count[f]++
	}
	if count["a"] != 100 || count["b"] != 200 || count["c"] != 400 {
		t.Fatalf("700 grants shared %v, want a 100, b 200, c 400", count)
	}
}

func TestFIFOWithinAFlowAndAQuietFlowServedAtOnce(t *testing.T) {
	s := &Sched[int]{}
	for i := range 500 {
		s.Push(&Item[int]{V: i, Weight: 1}, "noisy", 0)
	}
	s.Push(&Item[int]{V: -1, Weight: 1}, "quiet", 0)
	got := []int{}
	for range 3 {
		it := s.Next()
		s.Grant(it)
		got = append(got, it.V)
	}
	if fmt.Sprint(got) != "[0 -1 1]" {
		t.Fatalf("grants %v, want the noisy head, the quiet one, then the noisy one in order", got)
	}
}

func TestReservesAndStrictPriority(t *testing.T) {
	for _, tc := range []struct {
		reserves []int64
		want     string // the level of each of 4 grants, given level 0 and 1 backlogged and 3 permits held at level 0
	}{
		{[]int64{0, 1}, "[1 0 0 0]"},
		{nil, "[0 0 0 0]"},
	} {
		s := &Sched[int]{Reserves: tc.reserves}
		s.Held(0, 3)
		for i := range 4 {
			s.Push(&Item[int]{V: i, Weight: 1}, "", 0)
			s.Push(&Item[int]{V: i, Weight: 1}, "", 1)
		}
		var levels []int
		for range 4 {
			it := s.Next()
			s.Grant(it)
			levels = append(levels, it.Level)
		}
		if fmt.Sprint(levels) != tc.want {
			t.Fatalf("reserves %v: levels %v, want %s", tc.reserves, levels, tc.want)
		}
	}
}

func TestRemoveKeepsTheRoundAndTheCounts(t *testing.T) {
	s := &Sched[int]{}
	a, b, c := &Item[int]{V: 1, Weight: 1}, &Item[int]{V: 2, Weight: 1}, &Item[int]{V: 3, Weight: 1}
	s.Push(a, "a", 0)
	s.Push(b, "b", 0)
	s.Push(c, "c", 0)
	s.Remove(a)
	s.Remove(c)
	if it := s.Next(); it != b || s.Backlogged() != 1 || s.Len() != 1 {
		t.Fatalf("next %v, backlogged %d, len %d; want b alone", it, s.Backlogged(), s.Len())
	}
	s.Remove(b)
	if s.Next() != nil || s.Backlogged() != 0 || len(s.Items()) != 0 {
		t.Fatal("an empty scheduler still has items")
	}
}

func TestAHeavyRequestWaitsForItsFlowsCredit(t *testing.T) {
	s := &Sched[int]{}
	s.Push(&Item[int]{V: 1, Weight: 3}, "a", 0)
	s.Push(&Item[int]{V: 2, Weight: 1}, "b", 0)
	s.Push(&Item[int]{V: 3, Weight: 1}, "b", 0)
	s.Push(&Item[int]{V: 4, Weight: 1}, "b", 0)
	var got []int
	for it := s.Next(); it != nil; it = s.Next() {
		s.Grant(it)
		got = append(got, it.V)
	}
	// a's weight-3 head needs three turns of credit; b is served one per turn meanwhile.
	if fmt.Sprint(got) != "[2 3 1 4]" {
		t.Fatalf("grants %v, want [2 3 1 4]", got)
	}
}
