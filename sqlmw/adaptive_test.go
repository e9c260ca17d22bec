package sqlmw_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/adaptive"
	"github.com/distsem/distsem/sqlmw"
)

// sampleStore is an adaptive.Store that hands every non-empty window of
// samples to the test.
type sampleStore struct {
	adaptive.MemStore
	samples chan adaptive.Window
}

func (s *sampleStore) Sync(ctx context.Context, req adaptive.SyncRequest) (adaptive.SyncReply, error) {
	if req.Samples.Samples > 0 {
		s.samples <- req.Samples
	}
	return s.MemStore.Sync(ctx, req)
}

// Each query through an adaptive limit is a sample with its outcome: a
// failed Exec and a failed Query count as Failed, a query whose rows were
// read as a success, and a cancelled one not at all.
func TestQueriesFeedAnAdaptiveLimit(t *testing.T) {
	store := &sampleStore{samples: make(chan adaptive.Window, 100)}
	lim, err := adaptive.New(core.NewLocal(4), store, adaptive.WithWindow(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	db := sqlmw.OpenDB(newFakeDriver(), lim)
	defer db.Close()
	ctx := t.Context()
	if _, err := db.ExecContext(ctx, "FAIL"); !errors.Is(err, errFake) {
		t.Fatalf("Exec FAIL: %v", err)
	}
	if _, err := db.QueryContext(ctx, "FAIL"); !errors.Is(err, errFake) {
		t.Fatalf("Query FAIL: %v", err)
	}
	var n int64
	if err := db.QueryRowContext(ctx, "ROWS 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = db.ExecContext(cctx, "OK") // refused before it runs: no permit, no sample
	var got adaptive.Window
	for got.Samples < 3 {
		select {
		case w := <-store.samples:
			got.Samples += w.Samples
			got.Failed += w.Failed
			got.TimedOut += w.TimedOut
		case <-ctx.Done():
			t.Fatalf("samples so far %+v: %v", got, ctx.Err())
		}
	}
	if got.Samples != 3 || got.Failed != 2 || got.TimedOut != 0 {
		t.Fatalf("samples %+v, want 3 with 2 failed", got)
	}
}
