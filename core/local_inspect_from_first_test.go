package core_test

import (
	"context"
	"testing"

	"github.com/distsem/distsem/core"
)

// Local tracks its holders from its first Inspect on: holders granted
// before are counted in OmittedHolders, not listed, until released.
func TestLocalInspectListsHoldersFromFirstInspect(t *testing.T) {
	ctx := context.Background()
	s := core.NewLocal(10, core.WithOwner("pod-1"))
	before := []*core.Permit{
		acquireOK(t, s),
		acquireOK(t, s, core.WithWeight(3)),
		acquireOK(t, s, core.WithNote("untracked")),
	}
	snap, err := s.Inspect(ctx, 10)
	ok(t, err)
	if snap.InUse != 5 || len(snap.Holders) != 0 || snap.OmittedHolders != 3 {
		t.Fatalf("first Inspect: %+v, want 5 in use, 3 holders counted, none listed", snap)
	}

	after := acquireOK(t, s, core.WithWeight(2), core.WithNote("tracked"))
	snap, err = s.Inspect(ctx, 10)
	ok(t, err)
	if len(snap.Holders) != 1 || snap.OmittedHolders != 3 {
		t.Fatalf("second Inspect: %+v, want the permit granted since listed, 3 counted", snap)
	}
	if h := snap.Holders[0]; h.Token != after.Token() || h.Weight != 2 || h.Note != "tracked" || h.Owner != "pod-1" {
		t.Fatalf("holder %+v: want token %d, weight 2, note %q, owner %q", h, after.Token(), "tracked", "pod-1")
	}

	ok(t, before[1].Release(ctx))
	snap, err = s.Inspect(ctx, 1)
	ok(t, err)
	if snap.InUse != 4 || len(snap.Holders) != 1 || snap.OmittedHolders != 2 {
		t.Fatalf("after a release: %+v, want 4 in use, 1 listed, 2 counted", snap)
	}
	for _, p := range []*core.Permit{before[0], before[2], after} {
		ok(t, p.Release(ctx))
	}
	snap, err = s.Inspect(ctx, 10)
	ok(t, err)
	if snap.InUse != 0 || len(snap.Holders) != 0 || snap.OmittedHolders != 0 {
		t.Fatalf("all released: %+v, want nothing", snap)
	}
}

func acquireOK(t *testing.T, s *core.Local, opts ...core.AcquireOption) *core.Permit {
	t.Helper()
	p, err := s.Acquire(context.Background(), opts...)
	ok(t, err)
	return p
}
