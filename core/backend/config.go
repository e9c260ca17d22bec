package backend

import (
	"context"
	"fmt"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/bridge"
)

// Config is what a backend reads from the core.Options given to its
// constructor.
type Config struct {
	KeyPrefix string             // WithKeyPrefix; default "distsem:"
	LeaseTTL  time.Duration      // WithDefaultLeaseTTL; default 10s
	Observer  core.Observer      // WithObserver; nil if none
	OnError   func(error)        // WithOnError; nil if none
	Policy    core.FailurePolicy // WithFailurePolicy; default core.FailClosed
	Owner     string             // WithOwner; default core.DefaultOwner(), "" for none
	// Keyed reports that WithLimits or WithMaxIdleKeys was given: only
	// NewKeyed honours them, so a constructor of one semaphore panics.
	Keyed bool
}

var resolveOptions = bridge.ResolveOptions.(func([]core.Option) (string, time.Duration, core.Observer, func(error), core.FailurePolicy, string, bool))

// ResolveOptions applies opts to the defaults and returns the result. It
// panics, naming the option, on one that a network backend cannot honour:
// WithName and WithFairness (an in-process semaphore's). WithLimits and
// WithMaxIdleKeys are reported in Keyed, for the backend's constructor to
// refuse them unless it is keyed.
func ResolveOptions(opts ...core.Option) Config {
	var c Config
	c.KeyPrefix, c.LeaseTTL, c.Observer, c.OnError, c.Policy, c.Owner, c.Keyed = resolveOptions(opts)
	return c
}

// AcquireSpec is what one Acquire or TryAcquire call asks for.
type AcquireSpec struct {
	Weight   int64         // WithWeight; default 1
	LeaseTTL time.Duration // WithLeaseTTL; default the semaphore's lease TTL
	// LeaseTTLGiven reports that the call gave WithLeaseTTL: a backend
	// that cannot give a permit its own lease refuses the call with a
	// core.ErrInvalidArgument error rather than ignore it.
	LeaseTTLGiven bool
	Note          string // WithNote; default "", checked already
	Flow          string // WithFlow; default "", checked already
	Level         int    // WithLevel; default 0, in [0, core.MaxLevels)
}

var resolveAcquire = bridge.ResolveAcquire.(func(time.Duration, []core.AcquireOption) (int64, time.Duration, bool, string, string, int, error))

// ResolveAcquire applies opts to the defaults (weight 1, lease defaultTTL).
// It returns a core.ErrInvalidArgument error for a weight outside [1,
// core.MaxLimit], a lease below 100ms, or a bad note, flow or level.
func ResolveAcquire(defaultTTL time.Duration, opts ...core.AcquireOption) (AcquireSpec, error) {
	var a AcquireSpec
	var err error
	a.Weight, a.LeaseTTL, a.LeaseTTLGiven, a.Note, a.Flow, a.Level, err = resolveAcquire(defaultTTL, opts)
	return a, err
}

// RefuseFlow returns a core.ErrInvalidArgument error naming backend if the
// call asks for a flow or a level other than 0, for a backend that has
// neither.
func (a AcquireSpec) RefuseFlow(backend string) error {
	if a.Flow != "" || a.Level != 0 {
		return invalid("%s has no flows or priority levels (WithFlow, WithLevel)", backend)
	}
	return nil
}

var waitError = bridge.WaitError.(func(context.Context, string) error)

// WaitError is the error of an Acquire whose wait ended with ctx: it
// matches core.ErrNoPermit and context.DeadlineExceeded if the deadline
// passed, context.Canceled if ctx was cancelled. name is the semaphore's.
func WaitError(ctx context.Context, name string) error { return waitError(ctx, name) }

// CheckInspectLimit returns a core.ErrInvalidArgument error unless limit
// is in [1, core.MaxInspectLimit].
func CheckInspectLimit(limit int) error {
	if limit < 1 || limit > core.MaxInspectLimit {
		return invalid("inspect limit %d must be in [1, %d]", limit, core.MaxInspectLimit)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", core.ErrInvalidArgument, fmt.Sprintf(format, args...))
}
