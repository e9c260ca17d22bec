package main

import (
	"bytes"
	"strings"
	"testing"
)

// With -adaptive the job's first decision sets the slow start's limit,
// and the summary prints the path the limit took.
func TestAdaptiveJobPrintsTheLimitsPath(t *testing.T) {
	s := runJob(t, "-adaptive", "-rows", "20000", "-page", "500", "-slow", "20ms", "-limit", "8")
	if len(s.limits) == 0 {
		t.Fatal("no limit reported by the workers")
	}
	var b bytes.Buffer
	printLimitPath(&b, s)
	if !strings.HasPrefix(b.String(), "  adaptive limit 8 → 1 (") {
		t.Fatalf("limit path %q, want it to start with the slow start from 8 to 1", b.String())
	}
}

func TestAdaptiveNeedsTheSemaphoreMode(t *testing.T) {
	if _, err := parseFlags([]string{"-adaptive", "-mode", "none"}, &bytes.Buffer{}); err == nil {
		t.Fatal("-adaptive -mode none accepted")
	}
}

func TestLimitPathKeepsChangesInOrder(t *testing.T) {
	got := limitPath([]limitStep{{30, 4}, {10, 1}, {20, 2}, {25, 2}, {40, 4}})
	want := []limitStep{{10, 1}, {20, 2}, {30, 4}}
	if len(got) != len(want) {
		t.Fatalf("path %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("path %v, want %v", got, want)
		}
	}
}
