package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The main job's output in the repository's README is what the command
// prints: the same lines, in the same order, with only the figures (and
// the number of progress lines) differing.
func TestREADMEOutput(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const cmd = "$ go run ./examples/mapreduce -chart examples/mapreduce/timeline.svg\n"
	_, block, ok := strings.Cut(string(readme), cmd)
	if !ok {
		t.Fatalf("README.md does not show the command %q", cmd)
	}
	block, _, _ = strings.Cut(block, "```")

	var out syncBuffer
	chart := filepath.Join(t.TempDir(), "timeline.svg")
	args := append(append([]string{}, small...), "-progress", "1ms", "-chart", chart)
	if _, err := run(t.Context(), args, &out, &out); err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(out.String(), chart, "examples/mapreduce/timeline.svg")
	if g, w := shape(got), shape(block); g != w {
		t.Errorf("the README's output differs from the command's:\ncommand:\n%s\nREADME:\n%s", g, w)
	}
}

var figure = regexp.MustCompile(`[0-9]+(\.[0-9]+)?(ms|µs|s|%)?`)

// shape replaces the figures of an output with #, and keeps one progress
// line of a run of them.
func shape(out string) string {
	var b strings.Builder
	last := ""
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		line = figure.ReplaceAllString(line, "#")
		if line != last || !strings.HasPrefix(line, "  pages ") {
			b.WriteString(line + "\n")
		}
		last = line
	}
	return b.String()
}
