package core

// Fairness is how a semaphore with flows shares its limit between priority
// levels and between the flows of a level (see WithFlow and WithLevel).
// The zero Fairness is one level with no reserve, every flow of weight 1.
type Fairness struct {
	// Reserves has one entry per priority level, level 0 (the highest)
	// first. Level i can always hold Reserves[i] permits, whatever the
	// levels above it wait for; capacity beyond the reserves goes to the
	// highest level that has waiters. nil is one level with no reserve. At
	// most MaxLevels entries, each at least 0, adding up to at most the
	// limit (a limit lowered below their sum scales them down with it).
	Reserves []int64
	// Weights gives named flows a weight other than 1: backlogged flows
	// of one level receive grants in proportion to their weights. Each
	// weight is in [1, MaxLimit]; at most MaxWeightedFlows flows.
	Weights map[string]int64
}

// MaxWeightedFlows is the most flows that Fairness.Weights may name.
const MaxWeightedFlows = 1024

// WithFairness sets the semaphore's Fairness at construction; a backend
// with flows can change it at run time (SetFairness). The default is the
// zero Fairness. A Fairness that Check refuses makes the constructor
// panic; a backend without flows panics on the option, naming it.
func WithFairness(f Fairness) Option {
	return func(c *config) { c.fair = f; c.given |= optFairness }
}

// Levels returns the number of priority levels: len(Reserves), or 1.
func (f Fairness) Levels() int { return max(1, len(f.Reserves)) }

// Check returns an ErrInvalidArgument error naming the first problem of f
// for a semaphore of the given limit, or nil.
func (f Fairness) Check(limit int64) error {
	if len(f.Reserves) > MaxLevels {
		return invalid("%d levels, more than %d", len(f.Reserves), MaxLevels)
	}
	var sum int64
	for i, r := range f.Reserves {
		if r < 0 || r > limit-sum {
			return invalid("reserve %d of level %d: the reserves must be at least 0 and add up to at most the limit %d", r, i, limit)
		}
		sum += r
	}
	if len(f.Weights) > MaxWeightedFlows {
		return invalid("%d weighted flows, more than %d", len(f.Weights), MaxWeightedFlows)
	}
	for flow, w := range f.Weights {
		a := acquireConfig{flow: flow, flowSet: true}
		if err := a.checkFlow(); err != nil {
			return err
		}
		if w < 1 || w > MaxLimit {
			return invalid("weight %d of flow %q must be in [1, %d]", w, KeyLabel(flow), MaxLimit)
		}
	}
	return nil
}

// LevelStats is one priority level's part of Stats.
type LevelStats struct {
	InUse   int64 // the sum of the weights of the level's permits held
	Waiting int64 // the number of the level's queued Acquire calls
}
