package adaptive

import "time"

// EventKind tells what an Event reports.
type EventKind uint8

const (
	// EventState: this process synced a window with the store; the Event
	// has the controller's state as stored then (Limit, Baseline, Latency,
	// Window). Every process reports it, once per window it synced.
	EventState EventKind = iota + 1
	// EventDecision: this process computed window Window: the limit went
	// from Previous to Limit (equal if it held) for Reason. Only the
	// process that computed the window reports it.
	EventDecision
	// EventError: the store or the semaphore failed; Err is the cause. The
	// limit stays where it was.
	EventError
)

func (k EventKind) String() string {
	switch k {
	case EventState:
		return "state"
	case EventDecision:
		return "decision"
	case EventError:
		return "error"
	}
	return "unknown"
}

// Event is what an Observer receives.
type Event struct {
	Kind EventKind
	// Window is the number of the window computed: its start is Window ×
	// the window length after the Unix epoch, in the store's clock.
	Window int64
	// Limit is the limit set or, in monitor-only mode, recommended;
	// Previous the one before the decision.
	Limit, Previous int64
	// Baseline is the long-window latency, and Latency the mean latency
	// of the window the decision used.
	Baseline, Latency time.Duration
	// Samples, Failed and TimedOut count the window's samples, fleet-wide
	// (EventDecision only).
	Samples, Failed, TimedOut int64
	Reason                    Reason // EventDecision only
	MonitorOnly               bool   // the limit is recommended, not set
	Err                       error  // EventError only
}

// Observer receives a Limiter's events. Implementations must be safe for
// concurrent use and must not block.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }
