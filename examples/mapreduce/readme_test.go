package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The main job's output in the repository's README, the block between
// the markers <!-- mapreduce-output --> and <!-- /mapreduce-output -->, is
// what the command prints: the same lines, in the same order, with only
// the figures, the limit's kept or exceeded, and the number of progress
// lines differing.
func TestREADMEOutput(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- mapreduce-output -->", "<!-- /mapreduce-output -->"
	_, block, ok1 := strings.Cut(string(readme), begin)
	block, _, ok2 := strings.Cut(block, end)
	if !ok1 || !ok2 {
		t.Fatalf("README.md has no block between %s and %s", begin, end)
	}
	const cmd = "$ go run ./examples/mapreduce -chart examples/mapreduce/timeline.svg\n"
	block = strings.TrimSpace(block)
	block = strings.TrimSuffix(strings.TrimPrefix(block, "```\n"), "```")
	block, ok := strings.CutPrefix(block, cmd)
	if !ok {
		t.Fatalf("the README's output block does not start with the command %q", cmd)
	}

	var out syncBuffer
	chart := filepath.Join(t.TempDir(), "timeline.svg")
	args := append(append([]string{}, fleet...), "-progress", "1ms", "-chart", chart)
	if _, err := run(t.Context(), args, &out, &out); err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(out.String(), chart, "examples/mapreduce/timeline.svg")
	if g, w := shape(got), shape(block); g != w {
		t.Errorf("the README's output differs from the command's:\ncommand:\n%s\nREADME:\n%s", g, w)
	}
}

var (
	figure = regexp.MustCompile(`[0-9]+(\.[0-9]+)?(ms|µs|s|%)?`)
	kept   = regexp.MustCompile(`\b(kept|exceeded)\b`)
)

// shape replaces the figures of an output, and whether a run kept the
// limit, with #; it drops the spaces that align the comparison's columns,
// and keeps one progress line of a run of them.
func shape(out string) string {
	var b strings.Builder
	last := ""
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		line = kept.ReplaceAllString(figure.ReplaceAllString(line, "#"), "#")
		line = strings.Join(strings.Fields(line), " ")
		if line != last || !strings.HasPrefix(line, "pages ") {
			b.WriteString(line + "\n")
		}
		last = line
	}
	return b.String()
}
