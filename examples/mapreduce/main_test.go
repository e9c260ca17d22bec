package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distsem/distsem/internal/servertest"
)

// TestMain lets the test binary act as the job's worker processes, as the
// example binary does.
func TestMain(m *testing.M) {
	if args := os.Getenv(mainEnv); args != "" { // see cli_test.go
		os.Args = append([]string{"mapreduce"}, strings.Fields(args)...)
		main()
	}
	if cfg := os.Getenv(workerEnv); cfg != "" {
		if err := workerMain(context.Background(), cfg, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "mapreduce worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	servertest.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer for the parent and the workers' stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func runJob(t *testing.T, args ...string) *summary {
	t.Helper()
	var out syncBuffer
	s, err := run(t.Context(), append(args, "-progress", "0"), &out, &out)
	t.Logf("mapreduce %s\n%s", strings.Join(args, " "), out.String())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// small is a job of 12 pages of at least 20ms each for 2 workers of 3
// goroutines: 6 queries could run at once. It runs once, with no
// comparison run.
var small = []string{"-rows", "6000", "-page", "500", "-workers", "2", "-concurrency", "3", "-limit", "2", "-slow", "20ms", "-compare=false"}

// fleet is the default job (6 workers of 4 goroutines, limit 4, the first
// worker reads half the pages, then the -mode setmaxopen run to compare)
// on 12 pages of at least 20ms.
var fleet = []string{"-rows", "6000", "-page", "500", "-slow", "20ms"}

func TestEmbedded(t *testing.T) {
	t.Parallel()
	chart := filepath.Join(t.TempDir(), "chart.svg")
	s := runJob(t, append(small, "-chart", chart)...)
	if s.MaxInFlight < 1 || s.MaxInFlight > 2 {
		t.Errorf("max in flight = %d, want 1..2", s.MaxInFlight)
	}
	if s.Rows != 6000 || s.Pages != 12 || s.Queries != 12 || s.Permits != 12 {
		t.Errorf("rows %d, pages %d, queries %d, permits %d; want 6000, 12, 12, 12", s.Rows, s.Pages, s.Queries, s.Permits)
	}
	if s.MeanQuery < 20*time.Millisecond {
		t.Errorf("mean query %v, want at least the -slow 20ms", s.MeanQuery)
	}
	svg, err := os.ReadFile(chart)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg, []byte("<svg ")) || !bytes.HasSuffix(bytes.TrimSpace(svg), []byte("</svg>")) ||
		!bytes.Contains(svg, []byte("<path d=")) || !bytes.Contains(svg, []byte("limit 2")) {
		t.Errorf("chart is not an SVG timeline with the limit:\n%s", svg)
	}
}

// TestEmbeddedLeased runs the job with the semaphore's leased-shares mode
// (-leased): the fleet-wide limit holds there too.
func TestEmbeddedLeased(t *testing.T) {
	t.Parallel()
	s := runJob(t, append(small, "-leased")...)
	if s.MaxInFlight < 1 || s.MaxInFlight > 2 {
		t.Errorf("max in flight = %d, want 1..2", s.MaxInFlight)
	}
	if s.Rows != 6000 || s.Permits != 12 {
		t.Errorf("rows %d, permits %d; want 6000, 12", s.Rows, s.Permits)
	}
}

// TestEmbeddedWithoutLimit shows the check above can fail: without a
// limit the same job runs more than 2 queries at once.
func TestEmbeddedWithoutLimit(t *testing.T) {
	t.Parallel()
	if s := runJob(t, append(small, "-mode", "none")...); s.MaxInFlight <= 2 {
		t.Errorf("max in flight without a limit = %d, want > 2", s.MaxInFlight)
	}
	if s := runJob(t, append(small, "-mode", "setmaxopen")...); s.MaxInFlight > 2 {
		t.Errorf("max in flight with SetMaxOpenConns(1) in 2 workers = %d, want <= 2", s.MaxInFlight)
	}
}

// TestCeilingModesKeepTheLimit: -mode pipe and -mode list, the ceilings
// for measurements, run no more than K queries at once, and read every
// row once.
func TestCeilingModesKeepTheLimit(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"pipe", "list"} {
		s := runJob(t, append(small, "-mode", mode)...)
		if s.MaxInFlight < 1 || s.MaxInFlight > 2 {
			t.Errorf("-mode %s: max in flight = %d, want 1..2", mode, s.MaxInFlight)
		}
		if s.Rows != 6000 || s.Queries != 12 {
			t.Errorf("-mode %s: %d rows in %d queries, want 6000 in 12", mode, s.Rows, s.Queries)
		}
	}
}

// The default job runs twice. With the semaphore the fleet never runs more
// than K=4 queries; with the static split, SetMaxOpenConns(1) in each of 6
// workers, it either runs more than K, or leaves K slots idle: the first
// worker reads half the pages one query at a time, so the run lasts at
// least as long as those queries, and the 4 slots are about half busy at
// most (1/2 of the queries' time over 4 slots for at least 1/2 of it).
func TestComparison(t *testing.T) {
	t.Parallel()
	s := runJob(t, fleet...)
	c := s.Compared
	if c == nil || c.Mode != "setmaxopen" || s.Mode != "semaphore" {
		t.Fatalf("runs %q then %+v, want semaphore then setmaxopen", s.Mode, c)
	}
	if s.MaxInFlight < 1 || s.MaxInFlight > 4 {
		t.Errorf("semaphore: max in flight = %d, want 1..4", s.MaxInFlight)
	}
	for _, r := range []*summary{s, c} {
		if r.Rows != 6000 || r.Pages != 12 || r.Queries != 12 {
			t.Errorf("%s: rows %d, pages %d, queries %d; want 6000, 12, 12", r.Mode, r.Rows, r.Pages, r.Queries)
		}
	}
	if c.MaxInFlight <= 4 && c.SlotUse > 0.75 {
		t.Errorf("setmaxopen kept K (max in flight %d) and kept its slots %.0f%% busy; want K exceeded or slots idle", c.MaxInFlight, 100*c.SlotUse)
	}
	// The first worker's 4 goroutines share its one connection.
	if c.PoolWait == 0 {
		t.Error("setmaxopen: no query waited for its process's connection")
	}
}

// The pages are split among the workers: each page read once, the first
// worker reading -skew of them.
func TestPagesOf(t *testing.T) {
	for _, c := range []struct {
		workers int
		skew    float64
		first   int
	}{{1, 0.5, 100}, {6, 0.5, 50}, {6, 0, 17}, {4, 0.9, 90}, {3, 0.001, 0}, {101, 0.5, 50}} {
		cfg := workerConfig{Rows: 200000, Page: 2000, Workers: c.workers, Skew: c.skew}
		seen := map[int64]int{}
		for i := range c.workers {
			for _, p := range cfg.pagesOf(i) {
				seen[p]++
			}
		}
		for p := range int64(100) {
			if seen[p] != 1 {
				t.Errorf("%d workers, skew %v: page %d read %d times", c.workers, c.skew, p, seen[p])
			}
		}
		if n := len(cfg.pagesOf(0)); n != c.first || len(seen) != 100 {
			t.Errorf("%d workers, skew %v: the first reads %d pages, all %d; want %d, 100", c.workers, c.skew, n, len(seen), c.first)
		}
	}
}

func TestPostgres(t *testing.T) {
	dsn := servertest.PostgresDSN(t)
	addr := servertest.RedisAddr(t)
	id := fmt.Sprintf("%d_%d", os.Getpid(), time.Now().UnixNano())
	s := runJob(t, "-driver", "pgx", "-dsn", dsn, "-redis", "redis://"+addr,
		"-table", "mr_test_"+id, "-name", "mr-test-"+id,
		"-rows", "20000", "-page", "1000", "-workers", "3", "-concurrency", "3", "-limit", "3", "-slow", "50ms")
	if s.MaxInFlight < 1 || s.MaxInFlight > 3 {
		t.Errorf("max in flight = %d, want 1..3", s.MaxInFlight)
	}
	if s.Queries != 20 || s.Compared == nil || s.Compared.Queries != 20 {
		t.Errorf("queries = %d, compared run %+v; want 20 in each", s.Queries, s.Compared)
	}
}
