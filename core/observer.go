package core

import (
	"context"
	"slices"
	"time"
)

// EventKind tells what an Event reports.
type EventKind int

const (
	// EventWait: an Acquire joined the queue.
	EventWait EventKind = iota + 1
	// EventAcquired: a permit was granted. Wait is the time spent queued.
	EventAcquired
	// EventAbandoned: a queued Acquire gave up (ctx ended, closed, failure).
	// Wait is the time spent queued; Err says why.
	EventAbandoned
	// EventReleased: a permit was released. Wait is the time it was held.
	EventReleased
	// EventLost: a lease could not be kept. Every backend reports it
	// before it closes the permit's Lost channel.
	EventLost
	// EventBackendError: the backend failed. Err is the cause.
	EventBackendError
)

var eventKinds = [...]string{"unknown", "wait", "acquired", "abandoned", "released", "lost", "backend_error"}

func (k EventKind) String() string {
	if k < 0 || int(k) >= len(eventKinds) {
		k = 0
	}
	return eventKinds[k]
}

// Event is what an Observer receives.
type Event struct {
	Kind   EventKind
	Name   string // the semaphore's name, or the key of a keyed semaphore
	Weight int64
	Wait   time.Duration
	Err    error
	// Ctx is the ctx of the call that caused the event (Acquire,
	// TryAcquire, Release), so that an observer can join the caller's
	// trace. An event that comes later, in the background, carries the
	// values of the call that acquired the permit without its cancellation
	// (context.WithoutCancel): EventLost. It is nil for an event that no
	// call caused, such as the backend error of a failed renewal; Context
	// never returns nil.
	Ctx context.Context
	// Flow and Level are the call's flow and priority level (WithFlow,
	// WithLevel) on a backend with flows; "" and 0 otherwise. An
	// EventReleased carries the permit's level but no flow.
	Flow  string
	Level int
}

// Context returns e.Ctx, or context.Background() if it is nil.
func (e Event) Context() context.Context {
	if e.Ctx == nil {
		return context.Background()
	}
	return e.Ctx
}

// Observer receives events from a semaphore. Implementations must be safe
// for concurrent use and must not block.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }

// Observers returns an Observer that passes each event to every one of
// obs, in order, and skips the nil ones: for example a Prometheus and an
// OpenTelemetry observer on one semaphore, which takes one observer. Like
// each of obs, it is safe for concurrent use and does not block if they
// do not.
func Observers(obs ...Observer) Observer {
	return observers(slices.DeleteFunc(slices.Clone(obs), func(o Observer) bool { return o == nil }))
}

type observers []Observer

func (l observers) Observe(e Event) {
	for _, o := range l {
		o.Observe(e)
	}
}
