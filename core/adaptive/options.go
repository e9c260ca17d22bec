package adaptive

import (
	"fmt"
	"time"

	"github.com/distsem/distsem/core"
)

// Option configures New. Every option's documentation states its default;
// New refuses values out of range with an error matching
// core.ErrInvalidArgument.
type Option func(*config)

type config struct {
	params
	windowDur      time.Duration
	baselineDur    time.Duration
	baselineGiven  time.Duration
	observer       Observer
	onError        func(error)
	process        string
	opTimeout      time.Duration
	releaseTimeout time.Duration
	slowStartSet   bool
	processSet     bool
}

func defaultConfig() config {
	return config{
		params: params{
			min: 1, max: 1000, slowStart: 1,
			tolerance: 1.5, band: 0.2, maxStep: 0.25, maxDecrease: 0.5,
			backoff: 0.8, errorRate: 0.2, minSamples: 10,
		},
		windowDur:      time.Second,
		baselineDur:    time.Minute,
		opTimeout:      time.Second,
		releaseTimeout: 2 * time.Second,
	}
}

// WithWindow sets the length of a window: each process sends its samples
// once per window, and one process computes the limit once per window. The
// default is 1s. It must be > 0, and every process of one semaphore must
// use the same (windows of different lengths are kept apart in the store).
func WithWindow(d time.Duration) Option { return func(c *config) { c.windowDur = d } }

// WithBounds sets the smallest and largest limit the controller sets. The
// default is [1, 1000]. Both must be in [1, core.MaxLimit], with min <= max.
func WithBounds(min, max int64) Option {
	return func(c *config) { c.min, c.max = min, max }
}

// WithSlowStart sets the limit of the slow start: with no state stored
// (a fleet's first run, or after the state expired), the controller sets
// the limit to n, measures the baseline there, and doubles the limit each
// decision while the latency stays within the hysteresis band of the
// baseline (see WithHysteresis: the resource has room); the first window
// that allows no more ends the slow start, and the gradient (see
// WithTolerance) takes over. 0 skips the slow start: the controller then
// starts from the limit it finds and takes its first window's latency as
// the baseline, which overestimates the baseline if that limit already
// overloads the resource. The default is the lower bound (WithBounds; 1).
// It must be in [0, core.MaxLimit]; it is raised to the lower bound and
// lowered to the upper one.
func WithSlowStart(n int64) Option {
	return func(c *config) { c.slowStart, c.slowStartSet = n, true }
}

// WithTolerance sets how much latency the controller trades for
// concurrency, as a multiple of the baseline: the limit it aims at is
// tolerance × the concurrency the resource would serve at its baseline
// latency (the concurrency in force / (latency / baseline), by Little's
// law). On a resource that runs P queries at once and queues the rest,
// the limit thus settles near tolerance × P (3 on 2 cores at 1.5), where
// the mean latency is tolerance × the baseline. The default is 1.5. It
// must be > 1.
func WithTolerance(t float64) Option { return func(c *config) { c.tolerance = t } }

// WithHysteresis sets the half-width of the band around the limit in
// force, relative to it, within which the limit the gradient asks for
// does not move it: at 0.2, a limit of 10 holds while the gradient asks
// for 8 to 12. One permit more or less moves the latency of a resource
// that runs a few queries at once by more than a tenth, and a window's
// mean latency on a shared machine by as much again, so a narrower band
// makes small limits wander. The default is 0.2. It must be in [0, 0.5).
func WithHysteresis(h float64) Option { return func(c *config) { c.band = h } }

// WithMaxStep sets the largest relative change of the limit per window
// (the slow start doubles regardless): 0.25 lets a window move the limit
// by at most 25 %. The limit moves by whole permits, so a small limit may
// move by 1 even when that is more. The default is 0.25. It must be in
// (0, 1).
func WithMaxStep(f float64) Option { return func(c *config) { c.maxStep = f } }

// WithMaxDecrease sets the largest relative decrease of the limit per
// window when the latency jumps: when a window's latency alone, not
// averaged with the windows before, makes the gradient ask for more than
// one step (WithMaxStep) less than the latency measured before did, the
// controller takes that window's latency as it is and lowers the limit
// by up to this fraction at once (0.5: to half), so a resource that
// suddenly slows down (another load, a failover) sheds its queue within
// a decision or two. The
// default is 0.5. It must be in (0, 1); below WithMaxStep, it is raised
// to it.
func WithMaxDecrease(f float64) Option { return func(c *config) { c.maxDecrease = f } }

// WithBackoff sets the factor by which the limit is multiplied after a
// window in which more than WithErrorRate of the samples failed or timed
// out, bounded by WithMaxStep. The default is 0.8. It must be in (0, 1).
func WithBackoff(f float64) Option { return func(c *config) { c.backoff = f } }

// WithErrorRate sets the fraction of failed and timed-out samples in a
// window above which the limit backs off (WithBackoff). Some failures are
// the workload's own, not a sign of overload: optimistic transactions
// that conflict, requests refused for bad input; the default leaves room
// for them, so that the latency rule, not the failure rate, sets the
// limit of such a load where its throughput peaks. Set it lower when
// every failure means overload (timeouts of a resource that fails no
// other way). The default is 0.2. It must be in [0, 1).
func WithErrorRate(r float64) Option { return func(c *config) { c.errorRate = r } }

// WithMinSamples sets how many samples, fleet-wide, a window needs to be
// used; a window with fewer leaves the limit and the baseline as they are.
// The default is 10. It must be >= 1.
func WithMinSamples(n int64) Option { return func(c *config) { c.minSamples = n } }

// WithBaselineWindow sets the span of the long window: a window whose
// latency is above the baseline moves the baseline up by window/span of
// the way to the baseline that would make the window's latency the
// equilibrium of the limit in force (see WithTolerance), so that a
// resource that became slower for good is accepted in about this time; a
// lower latency moves it down by half the way at once. The default is 1 minute. It must be >= the window.
func WithBaselineWindow(d time.Duration) Option { return func(c *config) { c.baselineDur = d } }

// WithMonitorOnly makes the controller compute and report the limit it
// would set (Observer, Limiter.Recommended) without setting it: the
// semaphore keeps its own limit. The default is to set it. See the
// package documentation for how the recommendation is computed, and give
// WithBaseline with it unless the load is sometimes light.
func WithMonitorOnly() Option { return func(c *config) { c.monitor = true } }

// WithBaseline gives the baseline to start from: the resource's latency
// when it is not loaded, such as a query's time when it runs alone. The
// controller then does not need to measure it, and lowers it if it
// measures less. The default is 0: measure it (in the slow start, or
// from the first window). It must be >= 0.
func WithBaseline(d time.Duration) Option { return func(c *config) { c.baselineGiven = d } }

// WithObserver sets the hook that receives the controller's events: one
// EventDecision per window computed by this process, and EventError for a
// store or semaphore failure. The default is none.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

// WithOnError sets a hook called with every store or semaphore error of
// the controller's loop. The default is none. It must not block.
func WithOnError(f func(error)) Option { return func(c *config) { c.onError = f } }

// WithProcessID names this process in the store: samples are counted once
// per (process, window). The default is 16 random hex digits, new for each
// Limiter. It must not be empty.
func WithProcessID(id string) Option {
	return func(c *config) { c.process, c.processSet = id, true }
}

// WithOperationTimeout bounds each round trip of the controller's loop
// (the store, SetLimit, Stats). The default is 1s. It must be > 0.
func WithOperationTimeout(d time.Duration) Option { return func(c *config) { c.opTimeout = d } }

// WithReleaseTimeout bounds the release of a permit whose Release was
// given a ctx that had already ended, as core.Permit.ReleaseDetached does.
// The default is 2s. It must be > 0.
func WithReleaseTimeout(d time.Duration) Option { return func(c *config) { c.releaseTimeout = d } }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: adaptive: %s", core.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// buildConfig applies opts to the defaults and checks the result.
func buildConfig(opts []Option) (config, error) {
	c := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return c, invalid("nil Option")
		}
		o(&c)
	}
	switch {
	case c.min <= 0 || c.max <= 0 || c.min > core.MaxLimit || c.max > core.MaxLimit:
		return c, invalid("bounds [%d, %d] must be in [1, %d]", c.min, c.max, core.MaxLimit)
	case c.min > c.max:
		return c, invalid("lower bound %d is above the upper bound %d", c.min, c.max)
	case c.windowDur <= 0:
		return c, invalid("window %v must be > 0", c.windowDur)
	case c.baselineDur < c.windowDur:
		return c, invalid("baseline window %v is shorter than the window %v", c.baselineDur, c.windowDur)
	case c.slowStart < 0 || c.slowStart > core.MaxLimit:
		return c, invalid("slow start %d must be in [0, %d]", c.slowStart, core.MaxLimit)
	case !(c.tolerance > 1):
		return c, invalid("tolerance %v must be > 1", c.tolerance)
	case !(c.band >= 0 && c.band < 0.5):
		return c, invalid("hysteresis %v must be in [0, 0.5)", c.band)
	case !(c.maxStep > 0 && c.maxStep < 1):
		return c, invalid("max step %v must be in (0, 1)", c.maxStep)
	case !(c.maxDecrease > 0 && c.maxDecrease < 1):
		return c, invalid("max decrease %v must be in (0, 1)", c.maxDecrease)
	case !(c.backoff > 0 && c.backoff < 1):
		return c, invalid("backoff %v must be in (0, 1)", c.backoff)
	case !(c.errorRate >= 0 && c.errorRate < 1):
		return c, invalid("error rate %v must be in [0, 1)", c.errorRate)
	case c.minSamples < 1:
		return c, invalid("min samples %d must be >= 1", c.minSamples)
	case c.baselineGiven < 0:
		return c, invalid("baseline %v must be >= 0", c.baselineGiven)
	case c.opTimeout <= 0 || c.releaseTimeout <= 0:
		return c, invalid("timeouts must be > 0")
	case c.process == "" && c.processSet:
		return c, invalid("empty process ID")
	}
	if !c.slowStartSet {
		c.slowStart = c.min
	}
	if c.slowStart > 0 {
		c.slowStart = min(max(c.slowStart, c.min), c.max)
	}
	c.maxDecrease = max(c.maxDecrease, c.maxStep)
	c.window = c.windowDur.Seconds()
	c.baseline = c.baselineGiven.Seconds()
	c.baselineGain = c.window / c.baselineDur.Seconds()
	return c, nil
}
