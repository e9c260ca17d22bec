package core_test

import (
	"context"
	"errors"
	"testing"

	"github.com/distsem/distsem/core"
)

// A key's Fairness outlives the eviction of its idle Local, as a key's
// limit override does.
func TestKeyedFairnessKeptAcrossEviction(t *testing.T) {
	ctx := context.Background()
	k := core.NewLocalKeyed(2, core.WithMaxIdleKeys(0)) // an idle key is dropped at once
	defer k.Close()
	if _, err := k.Acquire(ctx, "a", core.WithLevel(1)); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("level 1 of a key with one level: err %v, want ErrInvalidArgument", err)
	}
	if err := k.SetFairness(ctx, "a", core.Fairness{Reserves: []int64{0, 3}}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("a reserve above the key's limit: err %v, want ErrInvalidArgument", err)
	}
	if err := k.SetFairness(ctx, "a", core.Fairness{Reserves: []int64{0, 1}}); err != nil {
		t.Fatal(err)
	}
	if k.Len() != 0 {
		t.Fatalf("%d keys kept, want the idle key dropped", k.Len())
	}
	p, err := k.Acquire(ctx, "a", core.WithLevel(1))
	if err != nil {
		t.Fatalf("level 1 after the key was made again: %v", err)
	}
	if st, _ := k.Stats(ctx, "a"); st.Levels[1].InUse != 1 {
		t.Fatalf("stats %+v: want 1 held at level 1", st)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
