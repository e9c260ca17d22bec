package core

import (
	"context"

	"github.com/distsem/distsem/core/internal/names"
)

// MaxLevels is the number of priority levels a semaphore can have: levels
// 0 (the highest) to MaxLevels-1.
const MaxLevels = 8

// WithFlow names the flow this Acquire belongs to: a tenant, an API key, a
// job id. Waiters of one flow are served in arrival order; across flows,
// a backend that has flows serves backlogged flows in proportion to their
// weights (equal by default). The default is no flow: the call joins the
// semaphore's default flow, "". A flow id is untrusted input and costs no
// memory per id: flows share a fixed number of queues. An empty flow, or
// one that is not valid UTF-8 or holds a control character, fails the call
// with an ErrInvalidArgument error; a flow longer than MaxKeyLen bytes is
// identified by its SHA-256, as keys are (see KeyLabel). A backend without
// flows refuses the option with an ErrInvalidArgument error that names it.
func WithFlow(flow string) AcquireOption {
	return func(a *acquireConfig) { a.flow, a.flowSet = flow, true }
}

// WithLevel puts this Acquire at a priority level: 0 is the highest and the
// default. Free capacity goes to the highest level that has waiters, but
// for the reserves a semaphore gives its lower levels. A level at or above
// the semaphore's number of levels fails the call with an
// ErrInvalidArgument error, as does any level but 0 on a backend without
// levels.
func WithLevel(level int) AcquireOption {
	return func(a *acquireConfig) { a.level = level }
}

// checkFlow checks a's flow and level, and replaces a flow longer than
// MaxKeyLen bytes with its label.
func (a *acquireConfig) checkFlow() error {
	if a.level < 0 || a.level >= MaxLevels {
		return invalid("level %d must be in [0, %d]", a.level, MaxLevels-1)
	}
	if !a.flowSet {
		return nil
	}
	if a.flow == "" {
		return invalid("flow must not be empty")
	}
	if why := names.CheckText(a.flow, len(a.flow)); why != "" {
		return invalid("flow: %s", why)
	}
	if len(a.flow) > MaxKeyLen {
		a.flow = names.NewKeyID(a.flow).Label(a.flow)
	}
	return nil
}

type flowKey struct{}

type flowValue struct {
	flow  string
	level int
}

// ContextWithFlow returns a copy of ctx that carries a flow and a level,
// for code that acquires deep inside a call (sqlmw, for one) to pass on
// with FlowOptions. An empty flow carries the level alone.
func ContextWithFlow(ctx context.Context, flow string, level int) context.Context {
	return context.WithValue(ctx, flowKey{}, flowValue{flow, level})
}

// FlowOptions returns WithFlow and WithLevel for the flow and level that
// ContextWithFlow put in ctx, or nil if it put none. Neither is checked
// until an Acquire uses them.
func FlowOptions(ctx context.Context) []AcquireOption {
	v, ok := ctx.Value(flowKey{}).(flowValue)
	if !ok {
		return nil
	}
	if v.flow == "" {
		return []AcquireOption{WithLevel(v.level)}
	}
	return []AcquireOption{WithFlow(v.flow), WithLevel(v.level)}
}
