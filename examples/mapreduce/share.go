package main

import "slices"

// workerPages is one worker's: when its first query started, and when each
// of its pages was done (unix ns).
type workerPages struct {
	first int64
	pages []int64
}

// share is pageShare's outcome: how the slowest worker fared.
type share struct {
	Ratio   float64 // the slowest worker's pace over the mean
	Slowest int     // its index
	First   int64   // when its first query started (unix ns)
	Done    int     // its pages done by End
	End     int64   // when the first worker finished: its last page (unix ns)
}

// pageShare measures how evenly the limit served the workers while each
// still had pages to read: until the first worker finished (its last
// page), each worker's rate is the pages it finished since its own first
// query started, per second. Ratio is the lowest rate over the mean (1:
// even; 0.5: the slowest worker went at half the mean pace). Every worker
// runs as many goroutines, so a fair limit gives each the same pace,
// whatever its number of pages (-skew). ok is false if fewer than two
// workers read pages.
func pageShare(workers map[int]*workerPages) (s share, ok bool) {
	var read []int
	for i, w := range workers {
		if len(w.pages) == 0 || w.first == 0 {
			continue
		}
		if last := slices.Max(w.pages); len(read) == 0 || last < s.End {
			s.End = last
		}
		read = append(read, i)
	}
	if len(read) < 2 {
		return share{}, false
	}
	slices.Sort(read) // among equal rates, the lowest index is named
	var sum float64
	s.Ratio = -1
	for _, i := range read {
		w := workers[i]
		done, rate := 0, 0.0
		if s.End > w.first {
			for _, t := range w.pages {
				if t <= s.End {
					done++
				}
			}
			rate = float64(done) / float64(s.End-w.first)
		}
		sum += rate
		if s.Ratio < 0 || rate < s.Ratio {
			s.Ratio, s.Slowest, s.First, s.Done = rate, i, w.first, done
		}
	}
	if sum == 0 {
		return share{}, false // no pages before the first worker's last one: cannot be
	}
	s.Ratio /= sum / float64(len(read))
	return s, true
}
