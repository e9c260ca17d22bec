package main

import "slices"

// workerPages is one worker's: when its first query started, and when each
// of its pages was done (unix ns).
type workerPages struct {
	first int64
	pages []int64
}

// pageShare measures how evenly the limit served the workers while each
// still had pages to read: until the first worker finished (its last
// page), each worker's rate is the pages it finished since its own first
// query started, per second. It returns the lowest rate over the mean (1:
// even; 0.5: the slowest worker went at half the mean pace). Every worker
// runs as many goroutines, so a fair limit gives each the same pace,
// whatever its number of pages (-skew). ok is false if fewer than two
// workers read pages.
func pageShare(workers map[int]*workerPages) (share float64, ok bool) {
	var read []*workerPages
	var end int64 // when the first worker finished
	for _, w := range workers {
		if len(w.pages) == 0 || w.first == 0 {
			continue
		}
		if last := slices.Max(w.pages); len(read) == 0 || last < end {
			end = last
		}
		read = append(read, w)
	}
	if len(read) < 2 {
		return 0, false
	}
	rates := make([]float64, len(read))
	var sum float64
	for i, w := range read {
		if end > w.first {
			done := 0
			for _, t := range w.pages {
				if t <= end {
					done++
				}
			}
			rates[i] = float64(done) / float64(end-w.first)
		}
		sum += rates[i]
	}
	if sum == 0 {
		return 0, false // no pages before the first worker's last one: cannot be
	}
	return slices.Min(rates) / (sum / float64(len(rates))), true
}
