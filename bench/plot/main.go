// Command plot draws the growth curves of bench/BENCHMARKS.md from the JSON
// lines that `bench/load -results` (and `load idlemem`) append:
//
//	go run ./plot -in results.jsonl -out DIR
//
// It writes, for the parts present in the file (see bench/run.sh):
//
//	growth-procs.svg    utilization, throughput and Jain's fairness index
//	                    vs processes (label growth-procs)
//	growth-waiters.svg  wait p50 and p99 vs waiters, and the share of
//	                    waiters served at least once (label growth-waiters)
//	growth-sems.svg     throughput vs distinct semaphores, with the Redis
//	                    memory per idle semaphore in the legend (growth-sems, idlemem)
//	cluster.svg         throughput on one node and on a 3-master Cluster
//	                    (cluster-1node, cluster-3masters)
//	peers.svg           throughput with limit 1, 4 processes × 4, and one
//	                    goroutine uncontended (peers-l1, peers-uncontended)
//
// Several repetitions of a point are drawn as their median. The in-process
// backends (local, xsync) run in one process: in the per-process plot they
// are drawn as a dashed horizontal line at their 1-process figure.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// row is the part of a result line the plots use.
type row struct {
	Label      string  `json:"label"`
	Backend    string  `json:"backend"`
	Procs      int     `json:"procs"`
	Workers    int     `json:"workers"`
	Sems       int     `json:"sems"`
	Throughput float64 `json:"Throughput"`
	Util       float64 `json:"Util"`
	Jain       float64 `json:"Jain"`
	WaitP50    float64 `json:"WaitP50"` // ns
	WaitP99    float64 `json:"WaitP99"` // ns
	Starved    int     `json:"starved"`
	IdleBytes  float64 `json:"idle_bytes"`
}

func main() {
	in := flag.String("in", "results.jsonl", "JSON lines of bench/load runs")
	out := flag.String("out", ".", "directory for the SVG files")
	flag.Parse()
	f, err := os.Open(*in)
	if err != nil {
		fail(err)
	}
	rows, err := readRows(f)
	f.Close()
	if err != nil {
		fail(err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail(err)
	}
	files, err := drawAll(rows, *out)
	if err != nil {
		fail(err)
	}
	for _, f := range files {
		fmt.Println("wrote", f)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "plot:", err)
	os.Exit(1)
}

func readRows(r io.Reader) ([]row, error) {
	var rows []row
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var x row
		if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		rows = append(rows, x)
	}
	return rows, sc.Err()
}

// drawAll writes every plot whose data is in rows, and returns the files.
func drawAll(rows []row, dir string) ([]string, error) {
	var files []string
	for _, c := range charts {
		sel := filter(rows, c.labels...)
		if len(sel) == 0 {
			continue
		}
		name := filepath.Join(dir, c.file)
		if err := c.draw(sel, rows, name); err != nil {
			return files, fmt.Errorf("%s: %w", c.file, err)
		}
		files = append(files, name)
	}
	return files, nil
}

// filter returns the rows of the given labels; "growth-sems/s100" is a
// point of label "growth-sems" (run.sh names each point, so that `load
// summarize` keeps the points apart).
func filter(rows []row, labels ...string) []row {
	var out []row
	for _, r := range rows {
		l, _, _ := strings.Cut(r.Label, "/")
		if slices.Contains(labels, l) {
			out = append(out, r)
		}
	}
	return out
}

// series is the median of y per x for one backend, x ascending.
type series struct {
	backend string
	xs, ys  []float64
}

// bySeries groups rows per backend, then per x, and takes the median y.
func bySeries(rows []row, x, y func(row) float64) []series {
	pts := map[string]map[float64][]float64{}
	for _, r := range rows {
		if pts[r.Backend] == nil {
			pts[r.Backend] = map[float64][]float64{}
		}
		pts[r.Backend][x(r)] = append(pts[r.Backend][x(r)], y(r))
	}
	var out []series
	for _, b := range backendOrder(pts) {
		s := series{backend: b}
		var xs []float64
		for k := range pts[b] {
			xs = append(xs, k)
		}
		slices.Sort(xs)
		for _, k := range xs {
			s.xs = append(s.xs, k)
			s.ys = append(s.ys, median(pts[b][k]))
		}
		out = append(out, s)
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
