package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// snippetMark is the comment above each Go block of the README: the name
// of its mirror, a region of snippets_test.go or the file main.go.
var snippetMark = regexp.MustCompile(`^<!-- snippet (\S+) -->$`)

// TestREADMESnippets checks that every Go block of the README is the text
// of a mirror that this package compiles: main.go, or a region of
// snippets_test.go. A block with no mark, a mark with no mirror, a mirror
// the README does not show, and any difference in the text fail the test.
func TestREADMESnippets(t *testing.T) {
	t.Parallel()
	blocks := readmeBlocks(t, "../../README.md")
	mirrors := regions(t, "snippets_test.go")
	main, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	mirrors["main.go"] = string(main)

	if len(blocks) == 0 {
		t.Fatal("README.md has no Go block")
	}
	shown := map[string]bool{}
	for _, b := range blocks {
		if b.name == "" {
			t.Errorf("README.md:%d: a Go block with no <!-- snippet NAME --> line above it", b.line)
			continue
		}
		want, ok := mirrors[b.name]
		if !ok {
			t.Errorf("README.md:%d: snippet %q has no mirror in docs/quickstart", b.line, b.name)
			continue
		}
		shown[b.name] = true
		if b.text != want {
			t.Errorf("README.md:%d: snippet %q differs from its mirror in docs/quickstart:\nREADME:\n%s\nmirror:\n%s", b.line, b.name, b.text, want)
		}
	}
	for name := range mirrors {
		if !shown[name] {
			t.Errorf("the mirror %q is not shown in README.md", name)
		}
	}
}

// TestREADMECommands checks that the README shows, as a command of its
// own, the test command that .ci/run runs, and the main job's command.
func TestREADMECommands(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^TEST_CMD=\((.+)\)$`).FindSubmatch(ci)
	if m == nil {
		t.Fatal(".ci/run has no TEST_CMD=(...) line")
	}
	for _, cmd := range []string{string(m[1]), "go run ./examples/mapreduce"} {
		if !strings.Contains(string(readme), "\n    "+cmd+"\n") {
			t.Errorf("README.md does not show the command %q on a line of its own", cmd)
		}
	}
}

type block struct {
	name string // from the mark above the block; "" if none
	line int    // of the opening fence
	text string
}

// readmeBlocks returns the fenced blocks of a Markdown file whose info
// string is go or golang, with the mark of each.
func readmeBlocks(t *testing.T, path string) []block {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		blocks []block
		cur    *block
		prev   string // the last non-blank line outside a block
		body   strings.Builder
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.text = body.String()
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line + "\n")
		case strings.HasPrefix(strings.TrimSpace(line), "```"):
			lang := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "```"))
			if lang == "go" || lang == "golang" {
				cur = &block{line: n}
				if m := snippetMark.FindStringSubmatch(prev); m != nil {
					cur.name = m[1]
				}
				body.Reset()
			}
		case strings.TrimSpace(line) != "":
			prev = line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s:%d: a Go block is not closed", path, cur.line)
	}
	return blocks
}

// regions returns the regions of a Go file between a "// snippet NAME"
// line and an "// end snippet" line, each line with one tab less.
func regions(t *testing.T, path string) map[string]string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	name := ""
	var body strings.Builder
	for _, line := range strings.Split(string(src), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "// snippet "):
			name = strings.TrimPrefix(trimmed, "// snippet ")
			body.Reset()
		case trimmed == "// end snippet":
			out[name] = body.String()
			name = ""
		case name != "":
			body.WriteString(strings.TrimPrefix(line, "\t") + "\n")
		}
	}
	if name != "" {
		t.Fatalf("%s: snippet %q has no end", path, name)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no snippet", path)
	}
	return out
}

// The README's program runs its five jobs, never more than its limit of 2
// at once.
func TestQuickstart(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = stdout }()
	main()
	w.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^job [0-4] runs, ([0-9]+) of 2 permits in use$`)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 5 {
		t.Fatalf("output %q: want 5 lines", out)
	}
	for _, l := range lines {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("output line %q: want %v", l, line)
		}
		if n, _ := strconv.Atoi(m[1]); n < 1 || n > 2 {
			t.Errorf("output line %q: %d permits in use, want 1 or 2", l, n)
		}
	}
}

func TestLocalSnippet(t *testing.T) {
	t.Parallel()
	ran := false
	err := localSnippet(t.Context(), func(context.Context) error { ran = true; return nil })
	if err != nil || !ran {
		t.Fatalf("localSnippet: err %v, ran %v", err, ran)
	}
}

func TestRedisSnippet(t *testing.T) {
	t.Parallel()
	srv := miniredis.RunT(t)
	var token int64
	err := redisSnippet(t.Context(), srv.Addr(), func(_ context.Context, tok int64, _ <-chan struct{}) error { token = tok; return nil })
	if err != nil || token <= 0 {
		t.Fatalf("redisSnippet: err %v, token %d", err, token)
	}
}

// The limited routes answer 503 while Redis is down; the others still
// answer.
func TestHTTPSnippet(t *testing.T) {
	t.Parallel()
	srv := miniredis.RunT(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux := httpSnippet(client, ok, ok, ok, ok)

	get := func(path string) int {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, path, nil))
		return rec.Code
	}
	for _, path := range []string{"/export", "/users/7", "/healthz", "/metrics"} {
		if code := get(path); code != http.StatusOK {
			t.Errorf("GET %s with Redis up: %d, want 200", path, code)
		}
	}
	srv.Close()
	for path, want := range map[string]int{"/export": 503, "/users/7": 503, "/healthz": 200, "/metrics": 200} {
		if code := get(path); code != want {
			t.Errorf("GET %s with Redis down: %d, want %d", path, code, want)
		}
	}
}
