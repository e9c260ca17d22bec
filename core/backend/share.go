package backend

import (
	"context"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/bridge"
)

// Share is the in-process side of a backend that leases a share of a
// fleet-wide limit to each process (such as core/redissem's leased mode):
// a FIFO in-process semaphore, like core.Local, whose weights are checked
// against the fleet-wide limit but of which at most share permits are
// granted to callers. Growing the share grants queued callers in FIFO
// order at once; shrinking it below the permits in use admits no one
// until enough holders release: a held permit is never revoked. It starts
// with a share of 0 and tokens from 1.
type Share struct{ loc *core.Local }

var (
	newShare    = bridge.NewShare.(func(string, int64, []core.Option) *core.Local)
	setShare    = bridge.SetShare.(func(*core.Local, int64, int64))
	shareState  = bridge.ShareState.(func(*core.Local) (int64, int64, int64, int64, int64, int64, int64))
	raiseTokens = bridge.RaiseTokens.(func(*core.Local, int64))
)

// NewShare returns a Share of limit with a share of 0, named name in
// events and errors. It takes core.WithObserver and core.WithOwner, and
// panics as core.NewLocal does.
func NewShare(name string, limit int64, opts ...core.Option) *Share {
	return &Share{loc: newShare(name, limit, opts)}
}

// Acquire is core.Local.Acquire within the share.
func (l *Share) Acquire(ctx context.Context, opts ...core.AcquireOption) (*core.Permit, error) {
	return l.loc.Acquire(ctx, opts...)
}

// TryAcquire is core.Local.TryAcquire within the share.
func (l *Share) TryAcquire(ctx context.Context, opts ...core.AcquireOption) (*core.Permit, error) {
	return l.loc.TryAcquire(ctx, opts...)
}

// Close is core.Local.Close.
func (l *Share) Close() error { return l.loc.Close() }

// Set makes limit the weight limit and lets at most share permits be in
// use by callers. A queued request heavier than a lowered limit fails with
// a core.ErrInvalidArgument error, as core.Local.SetLimit does.
func (l *Share) Set(limit, share int64) { setShare(l.loc, limit, share) }

// ShareState is what a Share holds.
type ShareState struct {
	InUse int64 // permits held by callers
	WaitW int64 // weight queued
	WaitN int64 // callers queued
	Head  int64 // the weight of the head waiter, 0 if none
	Share int64 // the permits callers may hold
	Limit int64
	// Grants counts the grants made so far, from 0: the tokens of the
	// grants that follow increase with it.
	Grants int64
}

// State returns what l holds now.
func (l *Share) State() ShareState {
	var st ShareState
	st.InUse, st.WaitW, st.WaitN, st.Head, st.Share, st.Limit, st.Grants = shareState(l.loc)
	return st
}

// RaiseTokens makes the next token at least base + 1.
func (l *Share) RaiseTokens(base int64) { raiseTokens(l.loc, base) }

// Inspect is core.Local.Inspect of the callers of this process: the
// holders of permits of the share and the callers queued for them.
func (l *Share) Inspect(ctx context.Context, limit int) (core.Snapshot, error) {
	return l.loc.Inspect(ctx, limit)
}
