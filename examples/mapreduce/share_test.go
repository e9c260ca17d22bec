package main

import (
	"math"
	"testing"
)

// pageShare compares the workers' paces until the first one finished.
func TestPageShare(t *testing.T) {
	for _, tc := range []struct {
		name    string
		workers map[int]*workerPages
		want    float64
		ok      bool
	}{
		{"even", map[int]*workerPages{0: {1, []int64{3, 5}}, 1: {1, []int64{2, 4, 6, 8}}}, 1, true},
		// Until worker 0's last page (9), worker 1, which started at 1
		// too, finished 1 page and worker 0 three: the mean pace is 2
		// pages in 8, and worker 1 went at half of it.
		{"one starved", map[int]*workerPages{0: {1, []int64{3, 5, 9}}, 1: {1, []int64{7, 10, 11}}}, 0.5, true},
		// A worker that started late is judged over its own span.
		{"a late start", map[int]*workerPages{0: {1, []int64{3, 5, 7, 9}}, 1: {5, []int64{7, 9, 11}}}, 1, true},
		{"one got nothing before another finished", map[int]*workerPages{0: {1, []int64{2}}, 1: {1, []int64{3}}}, 0, true},
		{"one worker", map[int]*workerPages{0: {1, []int64{2, 3}}}, 0, false},
	} {
		if got, ok := pageShare(tc.workers); got.Ratio != tc.want || ok != tc.ok {
			t.Errorf("%s: pageShare = %v, %v; want %v, %v", tc.name, got.Ratio, ok, tc.want, tc.ok)
		}
	}
}

// pageShare names the slowest worker, when it started and what it had
// done when the first worker finished.
func TestPageShareNamesTheSlowestWorker(t *testing.T) {
	workers := map[int]*workerPages{
		0: {1, []int64{3, 5, 9}},
		1: {1, []int64{2, 4, 6, 8, 9}},
		2: {4, []int64{7, 10, 11}},
	}
	got, ok := pageShare(workers)
	want := share{Slowest: 2, First: 4, Done: 1, End: 9}
	if !ok || got.Slowest != want.Slowest || got.First != want.First || got.Done != want.Done || got.End != want.End {
		t.Fatalf("pageShare = %+v, %v; want worker 2, first 4, 1 page by 9", got, ok)
	}
	// Rates until 9: worker 0 3/8, worker 1 5/8, worker 2 1/5. The mean is
	// (15+25+8)/120 = 0.4; worker 2 went at 0.2 / 0.4.
	if math.Abs(got.Ratio-0.5) > 1e-9 {
		t.Errorf("Ratio = %v, want 0.5", got.Ratio)
	}
}
