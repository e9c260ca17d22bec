package main

import (
	"context"
	"time"

	"github.com/distsem/distsem/core"
)

// state is what status and watch show of one semaphore.
type state struct {
	Name string
	// Stored is false when the backend holds nothing of the semaphore:
	// never used, or idle long enough that its keys expired. The counts
	// are then 0.
	Stored                bool
	Limit, InUse, Waiting int64
	// Listed reports that the backend listed the holders and waiters;
	// when false, Holders and Waiters are empty because the backend
	// cannot list them, not because there are none.
	Listed                         bool
	Holders                        []holder
	Waiters                        []waiter
	OmittedHolders, OmittedWaiters int64 // left out of the lists
}

// holder is one holder of permits.
type holder struct {
	ID        string
	Weight    int64
	Token     int64
	GrantedAt time.Time
	LeaseEnd  time.Time
	Owner     string
	Note      string
}

// waiter is one queued Acquire; Position 0 is the head of the queue.
type waiter struct {
	Position int64
	Weight   int64
	Since    time.Time
	Owner    string
	Note     string
}

// inspector reads the state of semaphores.
type inspector interface {
	inspect(ctx context.Context, name string) (state, error)
}

// newInspector returns the inspector that status and watch use on b.
func newInspector(b backend) inspector { return statsInspector{b} }

// maxListed is how many holders, and how many waiters, status lists of
// one semaphore; the rest are counted.
const maxListed = 100

// statsInspector reads a semaphore's counts with Stats, and lists its
// holders and waiters when the semaphore can (core.Inspector).
type statsInspector struct{ b backend }

func (i statsInspector) inspect(ctx context.Context, name string) (state, error) {
	st := state{Name: name}
	sem, err := i.b.open(name, 1, 0) // the stored limit wins over this 1
	if err != nil {
		return st, err
	}
	defer sem.Close()
	if st.Stored, err = i.b.stored(ctx, name); err != nil || !st.Stored {
		return st, err
	}
	in, ok := sem.(core.Inspector)
	if !ok {
		s, err := sem.Stats(ctx)
		if err != nil {
			return st, err
		}
		st.Limit, st.InUse, st.Waiting = s.Limit, s.InUse, s.Waiting
		return st, nil
	}
	snap, err := in.Inspect(ctx, maxListed)
	if err != nil {
		return st, err
	}
	st.Limit, st.InUse, st.Waiting, st.Listed = snap.Limit, snap.InUse, snap.Waiting, true
	st.OmittedHolders, st.OmittedWaiters = snap.OmittedHolders, snap.OmittedWaiters
	for _, h := range snap.Holders {
		st.Holders = append(st.Holders, holder{h.ID, h.Weight, h.Token, h.GrantedAt, h.LeaseEnd, h.Owner, h.Note})
	}
	for _, w := range snap.Waiters {
		st.Waiters = append(st.Waiters, waiter{w.Position, w.Weight, w.Since, w.Owner, w.Note})
	}
	return st, nil
}
