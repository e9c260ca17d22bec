package faulttest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/distsem/distsem/core/redissem"
)

// load is the workload of the failover scenarios: goroutines
// that acquire (5 s timeout), hold 10–30 ms and release (2 s timeout), in a
// loop, on one semaphore per process, recording every hold on the
// machine's clock.
type load struct {
	timeout time.Duration // of each Acquire and Release, if not 0
	mu      sync.Mutex
	ivs     map[string][]interval // per semaphore name
	grants  map[string][]int64    // UnixNano at each Acquire's return
	errs    map[string]int
	relErrs map[string]int
	errLog  []errAt // each distinct Acquire error (the first 16)
	wg      sync.WaitGroup
}

// errAt is a distinct Acquire error: when it came first and last
// (UnixNano), and how often.
type errAt struct {
	first, last int64
	n           int
	err         string
}

func newLoad() *load {
	return &load{ivs: map[string][]interval{}, grants: map[string][]int64{}, errs: map[string]int{}, relErrs: map[string]int{}}
}

// run starts n goroutines on sem until ctx ends.
func (l *load) run(ctx context.Context, sem *redissem.Semaphore, name string, n int) {
	for range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for ctx.Err() == nil {
				acqTimeout, relTimeout := 5*time.Second, 2*time.Second
				if l.timeout > 0 {
					acqTimeout, relTimeout = l.timeout, l.timeout
				}
				actx, cancel := context.WithTimeout(ctx, acqTimeout)
				p, err := sem.Acquire(actx)
				cancel()
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					l.mu.Lock()
					l.errs[name]++
					now, msg := time.Now().UnixNano(), err.Error()
					if i := slices.IndexFunc(l.errLog, func(e errAt) bool { return e.err == msg }); i >= 0 {
						l.errLog[i].last = now
						l.errLog[i].n++
					} else if len(l.errLog) < 16 {
						l.errLog = append(l.errLog, errAt{now, now, 1, msg})
					}
					l.mu.Unlock()
					time.Sleep(10 * time.Millisecond)
					continue
				}
				from := time.Now().UnixNano()
				time.Sleep(time.Duration(10+rand.IntN(21)) * time.Millisecond)
				to := time.Now().UnixNano()
				rctx, rcancel := context.WithTimeout(context.Background(), relTimeout)
				rerr := p.Release(rctx)
				rcancel()
				l.mu.Lock()
				if rerr != nil {
					l.relErrs[name]++
				}
				l.ivs[name] = append(l.ivs[name], interval{from: from, to: to, weight: 1})
				l.grants[name] = append(l.grants[name], from)
				l.mu.Unlock()
			}
		}()
	}
}

// stats are the figures of one semaphore's timeline around an event at T.
// The baseline is the rate of the second before the event (statsFrom: before
// base).
type stats struct {
	baseline float64       // grants/s in the second before T
	gap      time.Duration // longest time without a grant, from T on
	full     time.Duration // from T to the end of the last 250 ms window below half the baseline
	peak     int64
	grants   int
	over     time.Duration // time with more than the limit held, from T on
	under    time.Duration // longest span with fewer than the limit held, from T on
}

// spans returns, over [from, to], the time with more than limit held and
// the longest span with fewer than limit held.
func spans(ivs []interval, limit int64, from, to int64) (over, under time.Duration) {
	type ev struct{ at, d int64 }
	evs := make([]ev, 0, 2*len(ivs))
	for _, iv := range ivs {
		evs = append(evs, ev{iv.from, iv.weight}, ev{iv.to, -iv.weight})
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	var cur int64
	prev, belowSince := from, int64(-1)
	for _, e := range append(evs, ev{to, 0}) {
		at := min(max(e.at, from), to)
		if at > prev && cur > limit {
			over += time.Duration(at - prev)
		}
		if e.at >= from && e.at <= to {
			if cur < limit && belowSince < 0 {
				belowSince = max(prev, from)
			}
			if cur >= limit && belowSince >= 0 {
				under = max(under, time.Duration(at-belowSince))
				belowSince = -1
			}
		}
		prev = at
		cur += e.d
	}
	if belowSince >= 0 {
		under = max(under, time.Duration(to-belowSince))
	}
	return over, under
}

func (l *load) stats(name string, limit int64, at, end time.Time) stats {
	return l.statsFrom(name, limit, at, at, end)
}

// statsFrom is stats with the baseline taken in the second before base.
func (l *load) statsFrom(name string, limit int64, base, at, end time.Time) stats {
	l.mu.Lock()
	g := append([]int64(nil), l.grants[name]...)
	ivs := append([]interval(nil), l.ivs[name]...)
	l.mu.Unlock()
	sort.Slice(g, func(i, j int) bool { return g[i] < g[j] })
	T, E := at.UnixNano(), end.UnixNano()
	s := stats{peak: peak(ivs), grants: len(g)}
	s.over, s.under = spans(ivs, limit, at.UnixNano(), end.UnixNano())
	var before int
	last := T
	for _, x := range g {
		if B := base.UnixNano(); x >= B-int64(time.Second) && x < B {
			before++
		}
		if x >= T && x <= E {
			s.gap = max(s.gap, time.Duration(x-last))
			last = x
		}
	}
	s.gap = max(s.gap, time.Duration(E-last))
	s.baseline = float64(before)
	const win = 250 * time.Millisecond
	for w := T; w+int64(win) <= E; w += int64(50 * time.Millisecond) {
		n := 0
		for _, x := range g {
			if x >= w && x < w+int64(win) {
				n++
			}
		}
		if float64(n) < s.baseline*win.Seconds()/2 {
			s.full = time.Duration(w + int64(win) - T)
		}
	}
	return s
}

// lastGrant returns the UnixNano of the last grant on name, or 0.
func (l *load) count(name string, from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, x := range l.grants[name] {
		if x >= from.UnixNano() && x < to.UnixNano() {
			n++
		}
	}
	return n
}

func (l *load) errors(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errs[name]
}

// errorsAround returns each distinct Acquire error: how often, and from when
// to when relative to at, for a log line.
func (l *load) errorsAround(at time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.errLog {
		out = append(out, fmt.Sprintf("%d× %+dms..%+dms %s", e.n,
			time.Duration(e.first-at.UnixNano()).Milliseconds(), time.Duration(e.last-at.UnixNano()).Milliseconds(), e.err))
	}
	return out
}

// releaseErrors returns how many Release calls on name failed.
func (l *load) releaseErrors(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.relErrs[name]
}

// wait returns once every goroutine stopped.
func (l *load) wait(t testing.TB) {
	t.Helper()
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("load goroutines still running 15s after the end")
	}
}

// buckets returns the grants per step from from to to, for a log line.
func (l *load) buckets(name string, from, to time.Time, step time.Duration) []int {
	var out []int
	for w := from; w.Before(to); w = w.Add(step) {
		out = append(out, l.count(name, w, w.Add(step)))
	}
	return out
}
