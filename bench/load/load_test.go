package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distsem/distsem/bench/analyze"
)

func TestMedianRange(t *testing.T) {
	for _, c := range []struct {
		in          []float64
		med, lo, hi float64
	}{
		{[]float64{3, 1, 2}, 2, 1, 3},
		{[]float64{4, 1, 2, 3}, 2.5, 1, 4},
		{[]float64{7}, 7, 7, 7},
	} {
		in := append([]float64(nil), c.in...)
		med, lo, hi := medianRange(c.in)
		if med != c.med || lo != c.lo || hi != c.hi {
			t.Errorf("medianRange(%v) = %v %v %v, want %v %v %v", in, med, lo, hi, c.med, c.lo, c.hi)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Fatalf("medianRange reordered its input: %v", c.in)
			}
		}
	}
}

// summarized writes rs to a JSON-lines file, as -results does, and
// returns what summarize prints of it.
func summarized(t *testing.T, rs ...result) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "r.jsonl")
	var b bytes.Buffer
	for _, r := range rs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := summarize(&out, []string{path}, "seedsem"); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestSummarizeGroupsByLabelAndBackend(t *testing.T) {
	var rs []result
	for i, u := range []float64{0.80, 0.90, 0.85} {
		rs = append(rs, result{Label: "util", Backend: "distsem", Rep: i + 1, Limit: 4, Hold: 2 * time.Millisecond,
			Report: analyze.Report{Util: u, Throughput: 1000}})
	}
	rs = append(rs, result{Label: "util", Backend: "seedsem", Rep: 1, Report: analyze.Report{Util: 0.5}})
	s := summarized(t, rs...)
	for _, want := range []string{"### util / distsem", "3 repetitions", "| utilization | 0.850 | 0.800 – 0.900 |", "### util / seedsem", "| utilization | 0.500 | 0.500 – 0.500 |"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// The ratios to seedsem pair each repetition with seedsem's own: rep 1
// 1500/1000, rep 2 1800/2000, rep 3 1200/1000 give 1.50, 0.90, 1.20.
func TestSummarizeRatiosPairedByRepetition(t *testing.T) {
	var rs []result
	add := func(label, backend string, rep int, thr float64) {
		rs = append(rs, result{Label: label, Backend: backend, Rep: rep, Report: analyze.Report{Throughput: thr}})
	}
	for i, thr := range []float64{1000, 2000, 1000} {
		add("burst-seedsem", "seedsem", i+1, thr)
	}
	for i, thr := range []float64{1500, 1800, 1200} {
		add("burst-new", "distsem", i+1, thr)
	}
	add("other-new", "distsem", 1, 900) // no seedsem in its workload: no ratio
	s := summarized(t, rs...)
	if want := "| burst-new | 1.20 | 0.90 – 1.50 | 3 |"; !strings.Contains(s, want) {
		t.Errorf("summary lacks %q:\n%s", want, s)
	}
	for _, absent := range []string{"| other-new |", "| burst-seedsem |"} {
		if strings.Contains(s, absent) {
			t.Errorf("summary has a ratio row %q:\n%s", absent, s)
		}
	}
}

func TestCPUCounters(t *testing.T) {
	m, err := machineBusy()
	if err != nil || m <= 0 {
		t.Fatalf("machineBusy = %d, %v", m, err)
	}
	if _, err := procCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := procCPU(-1); err == nil {
		t.Error("procCPU(-1) did not fail")
	}
}

func TestCheckAcceptsPeers(t *testing.T) {
	for _, b := range []string{"distsem", "seedsem", "redsync", "redislock"} {
		c := config{backend: b, addr: "127.0.0.1:6430", cluster: "127.0.0.1:7000,127.0.0.1:7001", limit: 1, procs: 4, workers: 8, duration: time.Second, warmup: -1, cooldown: -1, sems: 100}
		if err := c.check(); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
}

func TestCheckRejectsBadConfigs(t *testing.T) {
	base := config{backend: "distsem", addr: "127.0.0.1:6430", limit: 4, procs: 4, workers: 32, duration: time.Second, warmup: -1, cooldown: -1, sems: 1}
	if err := base.check(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for name, mod := range map[string]func(*config){
		"remote redis":    func(c *config) { c.addr = "10.0.0.1:6379" },
		"local multiproc": func(c *config) { c.backend = "local" },
		"fewer workers":   func(c *config) { c.workers = 2 },
		"no window":       func(c *config) { c.warmup, c.cooldown = 600*time.Millisecond, 400*time.Millisecond },
		"unknown backend": func(c *config) { c.backend = "zk" },
		"mutex limit 4":   func(c *config) { c.backend = "redsync" },
		"redislock 4":     func(c *config) { c.backend = "redislock" },
		"remote cluster":  func(c *config) { c.cluster = "127.0.0.1:7000,10.0.0.2:7001" },
		"no semaphores":   func(c *config) { c.sems = 0 },
		"leased, remote":  func(c *config) { c.backend, c.addr = "leased", "10.0.0.1:6379" },
	} {
		c := base
		mod(&c)
		if err := c.check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
