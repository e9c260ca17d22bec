package adaptive

import (
	"context"
	"errors"
	"os"
	"time"
)

// Outcome is how the work done under a permit ended.
type Outcome uint8

const (
	// Success: the work completed; its latency is a sample of the
	// resource's. A permit released without an outcome counts as this.
	Success Outcome = iota
	// Failed: the resource failed the work (an error that says it is in
	// trouble, not a bad request).
	Failed
	// TimedOut: a deadline passed before the work completed.
	TimedOut
	// Ignored: the sample says nothing about the resource (the client went
	// away, the request was refused before it reached the resource); it is
	// not counted.
	Ignored
)

func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failed:
		return "failed"
	case TimedOut:
		return "timed_out"
	case Ignored:
		return "ignored"
	}
	return "unknown"
}

// OutcomeOf sorts an error returned by the work done under a permit: nil is
// Success, a passed deadline (context.DeadlineExceeded,
// os.ErrDeadlineExceeded) is TimedOut, a cancellation (context.Canceled) is
// Ignored, and any other error is Failed.
func OutcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return Success
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return TimedOut
	case errors.Is(err, context.Canceled):
		return Ignored
	}
	return Failed
}

// Sample is one observation of the protected resource.
type Sample struct {
	// Latency is how long the work took; 0 means the permit's hold time
	// (for a sample given to Limiter.Record, 0 is a latency of 0). A
	// negative latency is refused with core.ErrInvalidArgument.
	Latency time.Duration
	Outcome Outcome
}

type sampleKey struct{}

// ContextWithOutcome returns ctx carrying o, for the Release of a
// Limiter's permit: the permit's sample then has outcome o and its hold
// time as latency. A permit of another semaphore ignores it, so an adapter
// may pass it whatever semaphore it was given. The value survives
// context.WithoutCancel, so core.Permit.ReleaseDetached keeps it.
func ContextWithOutcome(ctx context.Context, o Outcome) context.Context {
	return context.WithValue(ctx, sampleKey{}, Sample{Outcome: o})
}

// ContextWithSample is ContextWithOutcome for a caller that measured the
// latency itself (the time a query took, without the time its rows waited
// to be read): s.Latency replaces the hold time unless it is 0.
func ContextWithSample(ctx context.Context, s Sample) context.Context {
	return context.WithValue(ctx, sampleKey{}, s)
}

func sampleFrom(ctx context.Context) (Sample, bool) {
	if ctx == nil {
		return Sample{}, false
	}
	s, ok := ctx.Value(sampleKey{}).(Sample)
	return s, ok
}
