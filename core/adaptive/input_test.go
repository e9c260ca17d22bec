package adaptive_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/adaptive"
)

func TestBadInputIsRefused(t *testing.T) {
	sem := core.NewLocal(4)
	for name, opt := range map[string]adaptive.Option{
		"min > max":         adaptive.WithBounds(10, 5),
		"min = 0":           adaptive.WithBounds(0, 5),
		"max < 0":           adaptive.WithBounds(1, -1),
		"window 0":          adaptive.WithWindow(0),
		"window < 0":        adaptive.WithWindow(-time.Second),
		"tolerance 1":       adaptive.WithTolerance(1),
		"step 1":            adaptive.WithMaxStep(1),
		"backoff 0":         adaptive.WithBackoff(0),
		"max decrease 1":    adaptive.WithMaxDecrease(1),
		"max decrease 0":    adaptive.WithMaxDecrease(0),
		"error rate 1":      adaptive.WithErrorRate(1),
		"min samples 0":     adaptive.WithMinSamples(0),
		"hysteresis 0.5":    adaptive.WithHysteresis(0.5),
		"slow start < 0":    adaptive.WithSlowStart(-1),
		"baseline < window": adaptive.WithBaselineWindow(time.Millisecond),
		"empty process":     adaptive.WithProcessID(""),
		"nil option":        nil,
		"operation timeout": adaptive.WithOperationTimeout(0),
		"release timeout":   adaptive.WithReleaseTimeout(-1),
	} {
		l, err := adaptive.New(sem, &adaptive.MemStore{}, opt)
		if !errors.Is(err, core.ErrInvalidArgument) || l != nil {
			t.Errorf("%s: New = %v, %v; want nil, ErrInvalidArgument", name, l, err)
		}
	}
	if _, err := adaptive.New(nil, &adaptive.MemStore{}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("nil semaphore: %v, want ErrInvalidArgument", err)
	}
	if _, err := adaptive.New(sem, nil); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("nil store: %v, want ErrInvalidArgument", err)
	}
}

func TestNegativeDurationsAreRefused(t *testing.T) {
	ctx := t.Context()
	sem := core.NewLocal(1)
	l, err := adaptive.New(sem, &adaptive.MemStore{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Record(adaptive.Sample{Latency: -time.Millisecond}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("Record(-1ms) = %v, want ErrInvalidArgument", err)
	}
	p, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Release(adaptive.ContextWithSample(ctx, adaptive.Sample{Latency: -time.Second}))
	if !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("Release with a latency of -1s = %v, want ErrInvalidArgument", err)
	}
	if _, err := sem.TryAcquire(ctx); err != nil {
		t.Errorf("the permit was not released after the refused sample: %v", err)
	}
	var m adaptive.MemStore
	for _, w := range []adaptive.Window{{Samples: 1, Latency: -1}, {Samples: -1}, {Samples: 1, Failed: 2}} {
		_, err := m.Sync(context.Background(), adaptive.SyncRequest{Process: "p", Length: time.Second, Samples: w})
		if !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("MemStore.Sync(%+v) = %v, want ErrInvalidArgument", w, err)
		}
	}
}

func TestOutcomeOf(t *testing.T) {
	for err, want := range map[error]adaptive.Outcome{
		nil:                      adaptive.Success,
		context.DeadlineExceeded: adaptive.TimedOut,
		context.Canceled:         adaptive.Ignored,
		errors.New("boom"):       adaptive.Failed,
	} {
		if got := adaptive.OutcomeOf(err); got != want {
			t.Errorf("OutcomeOf(%v) = %v, want %v", err, got, want)
		}
	}
}
