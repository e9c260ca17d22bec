package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDrawAllWritesOneSVGPerPart(t *testing.T) {
	in := `{"label":"growth-procs","backend":"distsem","procs":1,"Throughput":500,"Util":0.8}
{"label":"growth-procs/p4","backend":"distsem","procs":4,"Throughput":450,"Util":0.7}
{"label":"growth-procs","backend":"redsync","procs":1,"Throughput":300,"Util":0.5}
{"label":"growth-procs","backend":"redsync","procs":4,"Throughput":200,"Util":0.3}
{"label":"growth-procs","backend":"xsync","procs":1,"Throughput":900,"Util":0.99}
{"label":"growth-sems","backend":"distsem","sems":1,"Throughput":5000}
{"label":"growth-sems","backend":"distsem","sems":100,"Throughput":6000}
{"label":"idlemem","backend":"distsem","sems":100,"idle_bytes":120}
`
	rows, err := readRows(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := drawAll(rows, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "growth-procs.svg"), filepath.Join(dir, "growth-sems.svg")}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v, want %v", files, want)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b[:min(len(b), 512)], []byte("<svg")) {
			t.Errorf("%s is not an SVG file", f)
		}
	}
}

func TestMedianAndSeries(t *testing.T) {
	rows := []row{{Backend: "seedsem", Procs: 2, Util: 0.5}, {Backend: "seedsem", Procs: 2, Util: 0.7}, {Backend: "seedsem", Procs: 2, Util: 0.6},
		{Backend: "distsem", Procs: 1, Util: 0.9}}
	ss := bySeries(rows, func(r row) float64 { return float64(r.Procs) }, func(r row) float64 { return r.Util })
	if len(ss) != 2 || ss[0].backend != "distsem" || ss[1].backend != "seedsem" {
		t.Fatalf("series %+v: want distsem then seedsem (legend order)", ss)
	}
	if ss[1].ys[0] != 0.6 {
		t.Errorf("median of seedsem = %v, want 0.6", ss[1].ys[0])
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median = %v, want 2.5", m)
	}
}
