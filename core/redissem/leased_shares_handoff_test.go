package redissem_test

import (
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distsem/distsem/core/redissem"
)

// TestLeasedLimitOneHandsOffAcrossProcesses: limit 1, four processes of
// four goroutines each that always want it (holds of 1 ms). Shares do not
// suffice, so the permit must go from process to process by hand-off, in
// arrival order, not stay with one process until a rebalance. On the
// recorded timeline: never more than one holder fleet-wide; a process
// keeps the permit for one turn (the callers queued in it when its turn
// began: at most its 4 goroutines), or two turns in a row when no other
// process was queued meanwhile, never longer; every process gets grants,
// with Jain's index >= 0.95 over the counts.
func TestLeasedLimitOneHandsOffAcrossProcesses(t *testing.T) {
	const (
		procs, goroutines = 4, 4
		total             = 800 // grants in all before stopping
	)
	prefix := uniquePrefix(t)
	env := []string{"PREFIX=" + prefix, "NAME=one", "LIMIT=1", "TTL=3s",
		"GOROUTINES=" + strconv.Itoa(goroutines), "HOLD=1ms"}
	type grant struct {
		proc      int
		got, done int64
	}
	var (
		mu     sync.Mutex
		grants []grant
		n      atomic.Int64
		wg     sync.WaitGroup
		cmds   []*exec.Cmd
		ins    []io.WriteCloser
	)
	enough := make(chan struct{})
	var once sync.Once
	for i := range procs {
		cmd, in, sc := startLeasedChild(t, "leased-loop", env...)
		cmds, ins = append(cmds, cmd), append(ins, in)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				g := grant{proc: i}
				g.got, _ = strconv.ParseInt(f[1], 10, 64)
				g.done, _ = strconv.ParseInt(f[2], 10, 64)
				mu.Lock()
				grants = append(grants, g)
				mu.Unlock()
				if n.Add(1) == total {
					once.Do(func() { close(enough) })
				}
			}
		}()
	}
	<-enough
	stopChildren(t, ins, &wg, cmds)

	var held []interval
	for _, g := range grants {
		held = append(held, interval{time.Unix(0, g.got), time.Unix(0, g.done)})
	}
	if top := peak(held); top > 1 {
		t.Fatalf("%d holders at once fleet-wide, limit 1", top)
	}
	slices.SortFunc(grants, func(a, b grant) int { return int(a.got - b.got) })
	// The window in which every process ran: from the last first grant to
	// the first last release.
	first, last := make([]int64, procs), make([]int64, procs)
	for _, g := range grants {
		if first[g.proc] == 0 {
			first[g.proc] = g.got
		}
		last[g.proc] = g.done
	}
	from, to := slices.Max(first), slices.Min(last)
	counts := make([]float64, procs)
	var switches, inWindow, run, longest int
	prev := -1
	for _, g := range grants {
		if g.got < from || g.done > to {
			continue
		}
		inWindow++
		counts[g.proc]++
		if prev >= 0 && g.proc != prev {
			switches++
			run = 0
		}
		run++
		longest = max(longest, run)
		prev = g.proc
	}
	var sum, sumSq float64
	for _, c := range counts {
		sum += c
		sumSq += c * c
	}
	jain := sum * sum / (float64(procs) * sumSq)
	t.Logf("%d grants, %d in the common window: counts %v, Jain %.3f, %d changes of process, at most %d grants in a row in one", len(grants), inWindow, counts, jain, switches, longest)
	if inWindow < total/2 {
		t.Fatalf("only %d of %d grants while every process ran", inWindow, len(grants))
	}
	if longest > 2*goroutines {
		t.Fatalf("one process made %d grants in a row, want at most %d (two turns of its %d goroutines): it keeps the permit", longest, 2*goroutines, goroutines)
	}
	if jain < 0.95 {
		t.Fatalf("Jain's index %.3f over counts %v, want >= 0.95", jain, counts)
	}

	s := redissem.NewLeased(realClient(t), "one", 1, redissem.WithKeyPrefix(prefix))
	defer s.Close()
	wantStats(t, s, 0, 0)
}
