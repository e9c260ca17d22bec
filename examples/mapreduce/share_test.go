package main

import "testing"

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
		if got, ok := pageShare(tc.workers); got != tc.want || ok != tc.ok {
			t.Errorf("%s: pageShare = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
