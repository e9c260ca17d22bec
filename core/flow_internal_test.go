package core

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestFlowAndLevelInput(t *testing.T) {
	long := strings.Repeat("tenant-", 100)
	for _, tc := range []struct {
		name     string
		opts     []AcquireOption
		wantErr  string // "" for none
		wantFlow string
	}{
		{"none", nil, "", ""},
		{"flow", []AcquireOption{WithFlow("tenant-1")}, "", "tenant-1"},
		{"level 7", []AcquireOption{WithLevel(7)}, "", ""},
		{"empty flow", []AcquireOption{WithFlow("")}, "flow must not be empty", ""},
		{"control character", []AcquireOption{WithFlow("a\nb")}, "flow: has a control character", ""},
		{"not UTF-8", []AcquireOption{WithFlow("a\xffb")}, "flow: not valid UTF-8", ""},
		{"negative level", []AcquireOption{WithLevel(-1)}, "level -1 must be in [0, 7]", ""},
		{"level 8", []AcquireOption{WithLevel(MaxLevels)}, "level 8 must be in [0, 7]", ""},
		{"long flow", []AcquireOption{WithFlow(long)}, "", KeyLabel(long)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := buildAcquire(minLeaseTTL, append([]AcquireOption{WithWeight(1)}, tc.opts...))
			if tc.wantErr != "" {
				if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want ErrInvalidArgument with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || a.flow != tc.wantFlow {
				t.Fatalf("flow %q, err %v; want %q", a.flow, err, tc.wantFlow)
			}
			if len(a.flow) > MaxKeyLen {
				t.Fatalf("a %d-byte flow was kept", len(a.flow))
			}
		})
	}
}

func TestFlowOptionsCarryTheContextsFlow(t *testing.T) {
	if got := FlowOptions(context.Background()); got != nil {
		t.Fatalf("a bare ctx gave %d options", len(got))
	}
	for _, tc := range []struct {
		flow  string
		level int
		n     int
	}{{"tenant-1", 2, 2}, {"", 3, 1}} {
		opts := FlowOptions(ContextWithFlow(context.Background(), tc.flow, tc.level))
		a, err := buildAcquire(minLeaseTTL, opts)
		if err != nil || len(opts) != tc.n || a.flow != tc.flow || a.level != tc.level || a.flowSet != (tc.flow != "") {
			t.Fatalf("ctx flow %q level %d: %d options, flow %q level %d, err %v", tc.flow, tc.level, len(opts), a.flow, a.level, err)
		}
	}
}
