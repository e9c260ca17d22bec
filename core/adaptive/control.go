package adaptive

import (
	"math"
	"time"
)

// This file is the controller's arithmetic: a pure function of the stored
// state, one window's fleet-wide aggregate and the parameters, with no
// clock, no I/O and no randomness.

// State is what the controller remembers between windows. The process that
// computes a window reads it from the Store and writes the next one back,
// so any process can compute the next window.
type State struct {
	// Window is the last window computed; 0 for none.
	Window int64
	// Limit is the controller's limit before rounding and bounds.
	Limit float64
	// Applied is the last limit the controller stored (or, monitor-only,
	// recommended), or the semaphore's limit it started from.
	Applied int64
	// ChangedAt is the window during which Applied last changed (at its
	// start): the windows before it did not run under Applied, and are
	// not used.
	ChangedAt int64
	// Baseline is the long-window latency, in seconds; 0 until known.
	Baseline float64
	// Latency is the mean latency of the windows used since the limit
	// last changed, in seconds (an average of the last window with the
	// ones before, halving their weight each window), and Concurrency
	// their mean concurrency (Little's law); MeasuredAt is the last of
	// those windows.
	Latency, Concurrency float64
	MeasuredAt           int64
	// SlowStart reports that the controller is still in its slow start.
	SlowStart bool
}

// Window is the fleet-wide aggregate of one window's samples.
type Window struct {
	Samples  int64         // completed permits (and recorded samples)
	Latency  time.Duration // the sum of their latencies
	Failed   int64         // those whose outcome was Failed
	TimedOut int64         // those whose outcome was TimedOut
}

// Reason says why a window's decision went the way it did.
type Reason uint8

const (
	// ReasonIdle: fewer samples than WithMinSamples; the limit stays.
	ReasonIdle Reason = iota + 1
	// ReasonSettling: the window did not run entirely under the last
	// limit set; the limit stays.
	ReasonSettling
	// ReasonSlowStart: latency is within the hysteresis band of the
	// baseline during the slow start; the limit doubles.
	ReasonSlowStart
	// ReasonIncrease: the gradient asks for more than the limit, beyond
	// the hysteresis band.
	ReasonIncrease
	// ReasonHold: the gradient asks for a limit within the hysteresis
	// band of the limit in force.
	ReasonHold
	// ReasonUnderused: latency would allow more, but the fleet used less
	// than half of the limit, so more would prove nothing.
	ReasonUnderused
	// ReasonLatency: the gradient asks for less than the limit, beyond
	// the hysteresis band.
	ReasonLatency
	// ReasonBaseline: the gradient asks for less, but the last decrease
	// lowered the concurrency by a fifth or more and not the latency: the
	// resource got slower, or another load shares it. The baseline rises
	// to the one at which this latency is the limit's equilibrium, and the
	// limit holds instead of going down further (or back up).
	ReasonBaseline
	// ReasonErrors and ReasonTimeouts: more than WithErrorRate of the
	// window's samples failed or timed out; multiplicative decrease.
	ReasonErrors
	ReasonTimeouts
)

func (r Reason) String() string {
	switch r {
	case ReasonIdle:
		return "idle"
	case ReasonSettling:
		return "settling"
	case ReasonSlowStart:
		return "slow_start"
	case ReasonIncrease:
		return "increase"
	case ReasonHold:
		return "hold"
	case ReasonUnderused:
		return "underused"
	case ReasonLatency:
		return "latency"
	case ReasonBaseline:
		return "baseline"
	case ReasonErrors:
		return "errors"
	case ReasonTimeouts:
		return "timeouts"
	}
	return "unknown"
}

// params are the controller's parameters; see the With… options.
type params struct {
	min, max     int64
	slowStart    int64   // the slow start's first limit; 0: none
	tolerance    float64 // the limit aimed at over the parallelism in use, before the queue
	band         float64 // hysteresis: the relative half-width of the band around the limit
	maxStep      float64 // the largest relative change per window outside the slow start
	maxDecrease  float64 // the largest relative decrease per window when the latency jumps
	backoff      float64 // the factor of a decrease on errors or timeouts
	errorRate    float64 // failure fraction above which backoff applies
	minSamples   int64
	baselineGain float64 // how far the baseline moves up toward the window's latency per window
	window       float64 // seconds
	baseline     float64 // the baseline to start from, seconds; 0: measure it
	monitor      bool    // only recommend: the limit in force is not the one computed
}

// start returns the state of a controller that has computed nothing yet
// and finds the stored limit current. With a slow start (never when only
// monitoring: it would have to set the limit to measure), its first
// decision applies the slow start's limit.
func (p *params) start(current int64) State {
	if p.slowStart > 0 && !p.monitor {
		return State{Limit: float64(p.slowStart), Applied: current, SlowStart: true, Baseline: p.baseline}
	}
	return State{Limit: float64(current), Applied: current, Baseline: p.baseline}
}

// next computes the state after window w, numbered n, during window now
// (> n), from st. The limit to store is the new state's Applied.
func (p *params) next(st State, n, now int64, w Window) (State, Reason) {
	first := st.Window == 0
	st.Window = n
	switch {
	case first && st.SlowStart: // the first decision sets the slow start's limit
		return p.apply(st, now, st.Limit), ReasonSlowStart
	case w.Samples < p.minSamples || w.Samples == 0:
		return st, ReasonIdle
	case n < st.ChangedAt && !p.monitor: // a recommendation changes no latency
		return st, ReasonSettling
	}
	fail := float64(w.Failed+w.TimedOut) / float64(w.Samples)
	failReason := ReasonErrors
	if w.TimedOut > w.Failed {
		failReason = ReasonTimeouts
	}
	if fail > p.errorRate && !p.monitor {
		st.SlowStart = false
		return p.apply(st, now, st.Limit*math.Max(p.backoff, 1-p.maxStep)), failReason
	}
	lat := w.Latency.Seconds() / float64(w.Samples)
	conc := w.Latency.Seconds() / p.window
	prevLat, prevConc := st.Latency, st.Concurrency
	jump := p.jumped(st, lat, conc)
	if st.MeasuredAt >= st.ChangedAt && st.MeasuredAt > 0 && !jump {
		// The last window used ran under the same limit: average with it,
		// so that a noisy window alone moves nothing.
		lat, conc = (lat+prevLat)/2, (conc+prevConc)/2
	}
	st.Latency, st.Concurrency, st.MeasuredAt = lat, conc, n
	switch {
	case st.Baseline == 0 || lat < st.Baseline:
		if st.Baseline == 0 || st.SlowStart {
			st.Baseline = lat
		} else {
			st.Baseline += (lat - st.Baseline) / 2 // lower latency is evidence: follow it fast
		}
	case !p.monitor:
		// The long window: a slow drift toward the unloaded latency that
		// this window implies if the limit in force is the equilibrium.
		// (Only when the limit computed is in force: otherwise the latency
		// says nothing of it.)
		if target := lat / p.tolerance; target > st.Baseline {
			st.Baseline += (target - st.Baseline) * p.baselineGain
		}
	}
	ratio := lat / st.Baseline
	if fail > p.errorRate { // only recommending: at most backoff × the concurrency in force
		return p.apply(st, now, p.step(st, math.Min(p.gradient(conc, ratio), conc*p.backoff))), failReason
	}
	from := st.Limit
	if p.monitor {
		from = conc
	}
	want := p.gradient(from, ratio)
	if st.SlowStart {
		// Double while the latency stays within the hysteresis band of
		// the baseline: the resource has room, and queues nothing yet. A
		// doubling from there lands at most 1.6 × past the equilibrium
		// (tolerance × the parallelism), which the next decisions cut.
		if ratio <= 1+p.band {
			if conc < float64(st.Applied)/2 {
				return st, ReasonUnderused
			}
			return p.apply(st, now, st.Limit*2), ReasonSlowStart
		}
		st.SlowStart = false
	}
	switch {
	case want < st.Limit*(1-p.band):
		// A fifth less concurrency that did not lower latency: the
		// resource itself got slower, or something else loads it, and
		// less concurrency here does not bring its latency back. Hold:
		// the baseline becomes the one at which this latency is the
		// equilibrium of the limit in force. (Taking the latency itself
		// as the baseline would read the loaded resource as an unloaded
		// one and raise the limit against the other load. A smaller drop
		// hides in the noise of one window's latency.)
		if prevLat > 0 && conc < prevConc*0.8 && lat >= prevLat*0.95 {
			st.Baseline = math.Max(st.Baseline, lat/p.tolerance)
			return st, ReasonBaseline
		}
		if jump {
			return p.apply(st, now, math.Max(want, st.Limit*(1-p.maxDecrease))), ReasonLatency
		}
		return p.apply(st, now, p.step(st, want)), ReasonLatency
	case want > st.Limit*(1+p.band):
		if conc < float64(st.Applied)/2 {
			return st, ReasonUnderused
		}
		return p.apply(st, now, p.step(st, want)), ReasonIncrease
	}
	return st, ReasonHold
}

// gradient is the limit the gradient asks for, from a concurrency c
// (the limit in force, or the measured concurrency when only
// recommending) at a latency ratio (latency / baseline). By Little's
// law, c / ratio is the concurrency the resource would serve at its
// unloaded latency: its parallelism in use. The limit asked for is
// tolerance times that.
//
// Time that a permit spends outside the resource (the client's own
// work, the round trips, the hand-off to the next waiter) needs no
// queue of its own: it lowers the concurrency inside the resource, and so
// its latency, and the gradient raises the limit until the resource
// holds tolerance × its parallelism again.
func (p *params) gradient(c, ratio float64) float64 {
	return c * p.tolerance / ratio
}

// jumped reports whether a window's latency lat, alone, makes the
// gradient ask for more than one step (WithMaxStep) less than the latency
// measured before it did: the latency jumped (another load came, the
// resource slowed down), not wandered. Such a window is not averaged with
// the ones before, which would halve the jump, and the limit may fall by
// up to WithMaxDecrease at once, as Gradient2's gradient (at least 0.5)
// and Envoy's allow: a limit that is too high for the next windows costs
// every caller its latency, one that is too low is raised again by the
// next decisions. The jump is measured from the latency before, not from
// the limit, so that a limit held near the lower edge of the hysteresis
// band is not cut at once by a window a little slower than the others.
func (p *params) jumped(st State, lat, conc float64) bool {
	if st.Baseline == 0 || st.SlowStart || st.Latency == 0 || lat <= st.Latency {
		return false
	}
	from := st.Limit
	if p.monitor {
		from = conc
	}
	return p.gradient(from, lat/st.Baseline) < p.gradient(from, st.Latency/st.Baseline)*(1-p.maxStep)
}

// step bounds the move from the controller's limit to want by
// WithMaxStep.
func (p *params) step(st State, want float64) float64 {
	return math.Min(math.Max(want, st.Limit*(1-p.maxStep)), st.Limit*(1+p.maxStep))
}

// apply sets the controller's limit to l, within the bounds, and the limit
// to store to its rounded value; a change is dated now.
func (p *params) apply(st State, now int64, l float64) State {
	st.Limit = math.Min(math.Max(l, float64(p.min)), float64(p.max))
	a := int64(math.Round(st.Limit))
	if a != st.Applied {
		st.Applied, st.ChangedAt = a, now
	}
	return st
}
