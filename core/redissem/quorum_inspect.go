package redissem

import (
	"context"
	"errors"
	"fmt"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

var _ core.Inspector = (*Quorum)(nil)

// Inspect refuses with an error matching errors.ErrUnsupported: a permit
// of a Quorum is a set of permits, one on each master that granted it,
// each with its own ID and token, and a waiter queues on the masters one
// after the other, so no single list of holders and waiters would be
// true. InspectMasters lists each master's.
func (q *Quorum) Inspect(ctx context.Context, limit int) (core.Snapshot, error) {
	if err := backend.CheckInspectLimit(limit); err != nil {
		return core.Snapshot{}, err
	}
	return core.Snapshot{}, fmt.Errorf("redissem: Inspect of quorum %q: %w: use InspectMasters", q.name, errors.ErrUnsupported)
}

// InspectMasters returns each master's core.Snapshot, in the masters'
// order (see NewQuorum), as Semaphore.Inspect lists it: every master's
// holders are the shares of the Quorum's permits that it granted, under its
// own IDs and tokens. errs[i] is master i's error (snaps[i] is then zero);
// the call fails with an ErrUnavailable error if fewer than the required
// number of masters answered, and with limit's error if limit is not in
// [1, core.MaxInspectLimit].
func (q *Quorum) InspectMasters(ctx context.Context, limit int) (snaps []core.Snapshot, errs []error, err error) {
	if err := backend.CheckInspectLimit(limit); err != nil {
		return nil, nil, err
	}
	snaps, errs = make([]core.Snapshot, len(q.nodes)), make([]error, len(q.nodes))
	done := make(chan int, len(q.nodes))
	for i, s := range q.nodes {
		go func() { snaps[i], errs[i] = s.Inspect(ctx, limit); done <- i }()
	}
	ok := 0
	for range q.nodes {
		if errs[<-done] == nil {
			ok++
		}
	}
	if need := q.quorum(); ok < need {
		return snaps, errs, unavailable("inspect", q.name, fmt.Errorf("%d of %d masters answered, %d needed: %w", ok, len(q.nodes), need, errors.Join(errs...)))
	}
	return snaps, errs, nil
}
