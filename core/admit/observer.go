package admit

import (
	"fmt"
	"time"
)

// Reason says why a request was rejected.
type Reason uint8

const (
	// NoCapacity: no permit could be had in time. HTTP 429 (or 503),
	// gRPC ResourceExhausted.
	NoCapacity Reason = iota + 1
	// Unavailable: the backend failed or the semaphore is closed. HTTP
	// 503, gRPC Unavailable.
	Unavailable
	// ClientGone: the request's context ended before a permit was granted.
	// Nothing is written to the client; gRPC gets the context's code.
	ClientGone
)

// String returns a name fit for a metric label: "no_capacity",
// "unavailable" or "client_gone".
func (r Reason) String() string {
	switch r {
	case NoCapacity:
		return "no_capacity"
	case Unavailable:
		return "unavailable"
	case ClientGone:
		return "client_gone"
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Rejection is the error Controller.Acquire returns. Err is the cause from
// the semaphore (or ErrTooManyWaiting) and may hold backend details: log
// it, never send it to a client.
type Rejection struct {
	Reason Reason
	Key    string
	Err    error
}

// Error names the reason, the key (cut to 64 bytes: keys may come from
// clients and end up in log lines) and the cause.
func (r *Rejection) Error() string {
	key := r.Key
	if len(key) > maxLoggedKey {
		key = key[:maxLoggedKey] + "…"
	}
	return fmt.Sprintf("admit: %s for key %q: %v", r.Reason, key, r.Err)
}

const maxLoggedKey = 64

// Unwrap returns the cause, so errors.Is(err, core.ErrNoPermit),
// core.ErrUnavailable and context.Canceled work through a Rejection.
func (r *Rejection) Unwrap() error { return r.Err }

// EventKind tells what an Event reports.
type EventKind uint8

const (
	// EventQueued: the request found no free permit and began to wait.
	EventQueued EventKind = iota + 1
	// EventDequeued: the request stopped waiting. EventAdmitted or
	// EventRejected follows at once.
	EventDequeued
	// EventAdmitted: a permit was granted. Wait is the time Acquire took.
	EventAdmitted
	// EventRejected: the request was rejected. Reason says why, Wait is the
	// time Acquire took and Err is the cause.
	EventRejected
	// EventReleased: the permit was released. Wait is the time it was
	// held; Err is the release error, if any.
	EventReleased
	// EventLost: the permit's lease was lost while the request ran (see
	// core.Permit.Lost). It is reported when the request ends, just before
	// its EventReleased.
	EventLost
)

func (k EventKind) String() string {
	switch k {
	case EventQueued:
		return "queued"
	case EventDequeued:
		return "dequeued"
	case EventAdmitted:
		return "admitted"
	case EventRejected:
		return "rejected"
	case EventReleased:
		return "released"
	case EventLost:
		return "lost"
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is what an Observer receives. For one admitted request the order is
// [EventQueued, EventDequeued,] EventAdmitted, [EventLost,] EventReleased;
// for a rejected one [EventQueued, EventDequeued,] EventRejected. In-flight
// requests of a key are its EventAdmitted minus its EventReleased; waiting
// ones its EventQueued minus its EventDequeued.
type Event struct {
	Kind   EventKind
	Key    string
	Reason Reason        // EventRejected only
	Wait   time.Duration // see EventKind
	Err    error
}

// Observer receives a Controller's events. Observe is called synchronously
// on the request's goroutine: it must be safe for concurrent use and must
// not block.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }
