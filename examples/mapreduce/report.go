package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// event is a query starting (+1) or ending (-1) somewhere in the fleet.
type event struct {
	at    int64 // unix ns
	delta int
}

// collector gathers the reports of every worker.
type collector struct {
	mu         sync.Mutex
	events     []event
	inFlight   int
	pages      int64
	rows, sum  int64
	permitWait time.Duration
	permits    int64
	poolWait   time.Duration
	limits     []limitStep          // -adaptive: the limit set, by the worker that set it
	perWorker  map[int]*workerPages // when each worker's first query started, and its pages were done
}

// read consumes the reports of worker i until EOF. A line that is not a
// valid report, or a stream that ends without the worker's done report,
// is an error: the figures would be wrong.
func (c *collector) read(i int, r io.Reader) error {
	sc := bufio.NewScanner(r)
	done := false
	for n := 1; sc.Scan(); n++ {
		var rep report
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		err := dec.Decode(&rep)
		if err == nil && dec.More() {
			err = errors.New("more than one value on the line")
		}
		if err == nil && done {
			err = errors.New("a report after the done report")
		}
		if err == nil {
			done, err = rep.Kind == kindDone, c.add(i, rep)
		}
		if err != nil {
			return fmt.Errorf("worker report line %d %q: %w", n, sc.Text(), err)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if !done {
		return errors.New("worker reports ended without its done report")
	}
	return nil
}

// add counts one report of worker i.
func (c *collector) add(i int, rep report) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch rep.Kind {
	case kindStart, kindEnd:
		if rep.At <= 0 {
			return fmt.Errorf("%s report without its instant", rep.Kind)
		}
		if rep.Kind == kindStart {
			if w := c.worker(i); w.first == 0 {
				w.first = rep.At
			}
			c.events = append(c.events, event{rep.At, +1})
			c.inFlight++
		} else {
			c.events = append(c.events, event{rep.At, -1})
			c.inFlight--
		}
	case kindPage:
		if rep.At > 0 {
			w := c.worker(i)
			w.pages = append(w.pages, rep.At)
		}
		c.pages++
		c.rows += rep.Rows
		c.sum += rep.Sum
	case kindLimit:
		c.limits = append(c.limits, limitStep{rep.At, rep.Limit})
	case kindDone:
		c.permitWait += rep.PermitWait
		c.permits += rep.Permits
		c.poolWait += rep.PoolWait
	default:
		return fmt.Errorf("unknown report kind %q", rep.Kind)
	}
	return nil
}

// worker returns worker i's pages; c.mu is held.
func (c *collector) worker(i int) *workerPages {
	if c.perWorker == nil {
		c.perWorker = make(map[int]*workerPages)
	}
	w := c.perWorker[i]
	if w == nil {
		w = &workerPages{}
		c.perWorker[i] = w
	}
	return w
}

func (c *collector) progress() (pages, rows int64, inFlight int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pages, c.rows, c.inFlight
}

// summary is the outcome of a job.
type summary struct {
	Mode                 string
	Limit                int64
	Workers, Concurrency int
	Pages, Rows, Sum     int64
	WantRows, WantSum    int64
	Elapsed              time.Duration
	RowsPerSec           float64
	Queries              int
	MaxInFlight          int // highest number of queries running at once, fleet-wide
	MeanQuery            time.Duration
	Startup              time.Duration // until the first query started
	SlotUse              float64       // busy query time / (K × time from first start to last end)
	PermitWait, PoolWait time.Duration
	Permits              int64
	PageShare            share    // the slowest worker's rate of pages over the mean, and when it read them
	PageShareOK          bool     // PageShare is measured: two workers or more read pages
	Compared             *summary // the -compare run with -mode setmaxopen, if any
	events               []event
	limits               []limitStep
	startNanos, endNanos int64
}

// timeline sorts the events; at equal instants an end comes before a start,
// as a permit is released before it is granted again.
func timeline(events []event) []event {
	ev := slices.Clone(events)
	slices.SortFunc(ev, func(a, b event) int {
		if a.at != b.at {
			return int(min(max(a.at-b.at, -1), 1))
		}
		return a.delta - b.delta
	})
	return ev
}

func (c *collector) summarize(s *summary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.Pages, s.Rows, s.Sum = c.pages, c.rows, c.sum
	s.PermitWait, s.Permits, s.PoolWait = c.permitWait, c.permits, c.poolWait
	s.events = timeline(c.events)
	s.limits = c.limits
	s.PageShare, s.PageShareOK = pageShare(c.perWorker)
	var cur int
	var busy int64 // sum over queries of their duration
	for _, e := range s.events {
		cur += e.delta
		s.MaxInFlight = max(s.MaxInFlight, cur)
		busy -= int64(e.delta) * e.at
		if e.delta > 0 {
			s.Queries++
		}
	}
	if s.Queries > 0 {
		s.MeanQuery = time.Duration(busy / int64(s.Queries))
		first, last := s.events[0].at, s.events[len(s.events)-1].at
		s.Startup = time.Duration(first - s.startNanos)
		if last > first {
			s.SlotUse = float64(busy) / (float64(s.Limit) * float64(last-first))
		}
	}
	if s.Elapsed > 0 {
		s.RowsPerSec = float64(s.Rows) / s.Elapsed.Seconds()
	}
}

func (s *summary) print(w io.Writer) {
	check := "ok"
	if s.Rows != s.WantRows || s.Sum != s.WantSum {
		check = fmt.Sprintf("MISMATCH: want %d rows, sum %d", s.WantRows, s.WantSum)
	}
	mean := func(d time.Duration, n int64) time.Duration {
		if n == 0 {
			return 0
		}
		return d / time.Duration(n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "summary (%s, limit %d, %d workers x %d goroutines)\n", s.Mode, s.Limit, s.Workers, s.Concurrency)
	fmt.Fprintf(&b, "  rows           %d in %d pages, checksum %s\n", s.Rows, s.Pages, check)
	fmt.Fprintf(&b, "  elapsed        %v\n", s.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(&b, "  throughput     %.0f rows/s\n", s.RowsPerSec)
	fmt.Fprintf(&b, "  queries        %d, mean %v on the database\n", s.Queries, s.MeanQuery.Round(time.Microsecond))
	fmt.Fprintf(&b, "  max in flight  %d concurrent queries, fleet-wide (limit %d)\n", s.MaxInFlight, s.Limit)
	fmt.Fprintf(&b, "  startup        %v until the first query ran (processes start, connect)\n", s.Startup.Round(time.Millisecond))
	fmt.Fprintf(&b, "  slot use       %.0f%% of K slots busy from the first query's start to the last one's end\n", 100*s.SlotUse)
	if s.Mode == "semaphore" {
		fmt.Fprintf(&b, "  permit wait    %v total, %v mean over %d permits\n",
			s.PermitWait.Round(time.Millisecond), mean(s.PermitWait, s.Permits).Round(time.Microsecond), s.Permits)
	}
	fmt.Fprintf(&b, "  pool wait      %v total (database/sql waiting for a connection)\n", s.PoolWait.Round(time.Millisecond))
	if s.PageShareOK {
		p := s.PageShare
		fmt.Fprintf(&b, "  page share     %.2f of the mean pace for the slowest worker, until one finished (1 is even)\n", p.Ratio)
		fmt.Fprintf(&b, "                 worker %d: first query at %v, %d pages by %v, when the first worker finished\n",
			p.Slowest, time.Duration(p.First-s.startNanos).Round(time.Millisecond), p.Done, time.Duration(p.End-s.startNanos).Round(time.Millisecond))
	}
	io.WriteString(w, b.String())
	printLimitPath(w, s)
}

// printComparison prints the runs side by side: wall time, the most
// queries the database saw at once, whether that kept within K, and how
// busy the K slots were.
func printComparison(w io.Writer, runs ...*summary) {
	var b strings.Builder
	fmt.Fprintf(&b, "%-13s %9s %14s  %-9s %8s\n", "comparison", "elapsed", "max in flight", fmt.Sprintf("limit %d", runs[0].Limit), "slot use")
	for _, s := range runs {
		kept := "kept"
		if int64(s.MaxInFlight) > s.Limit {
			kept = "exceeded"
		}
		fmt.Fprintf(&b, "  %-11s %9v %14d  %-9s %7.0f%%\n", s.Mode, s.Elapsed.Round(time.Millisecond), s.MaxInFlight, kept, 100*s.SlotUse)
	}
	io.WriteString(w, b.String())
}
