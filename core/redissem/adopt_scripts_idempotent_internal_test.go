package redissem

import (
	"context"
	"testing"

	"github.com/distsem/distsem/core"
)

// TestCrossProcessScriptsIdempotent runs each cross-process script (adopt,
// release by id) twice with the same arguments, as a go-redis retry after
// a lost reply does: the second run must answer as the first (adopt: the
// same permit; release by id: released) and change nothing.
func TestCrossProcessScriptsIdempotent(t *testing.T) {
	c := miniClient(t)
	s := New(c, "idem", 3)
	defer s.Close()
	ctx := context.Background()
	p, err := s.TryAcquire(ctx, core.WithWeight(2))
	if err != nil {
		t.Fatal(err)
	}
	nid := s.b.newID(false)
	var infos []string
	for i := range 2 {
		r, err := s.run(ctx, scriptAdopt, s.limit, p.ID(), nid, int64(10000), int64(5000), int64(0))
		if err != nil || r.value != 1 || len(r.lost) != 1 || r.again != (i == 1) {
			t.Fatalf("adopt run %d: %+v, %v; want adopted (again on the second run)", i+1, r, err)
		}
		infos = append(infos, r.lost[0])
	}
	if infos[0] != infos[1] {
		t.Fatalf("adopt runs answered %q then %q", infos[0], infos[1])
	}
	for i := range 2 {
		r, err := s.run(ctx, scriptSetLease, s.limit, nid, int64(20000))
		if err != nil || r.code != 1 {
			t.Fatalf("set lease run %d: %+v, %v", i+1, r, err)
		}
	}
	if st, err := s.Stats(ctx); err != nil || st.InUse != 2 {
		t.Fatalf("stats after adopting twice: %+v, %v; want 2 in use", st, err)
	}
	for i, want := range []int64{1, tombReleasedID} {
		r, err := s.run(ctx, scriptRelease, s.limit, nid, int64(5000), releaseByID)
		if err != nil || r.code != want {
			t.Fatalf("release id run %d: %+v, %v; want code %d", i+1, r, err, want)
		}
	}
	if st, err := s.Stats(ctx); err != nil || st.InUse != 0 {
		t.Fatalf("stats after releasing twice: %+v, %v; want 0 in use", st, err)
	}
	if r, err := s.run(ctx, scriptSetLease, s.limit, nid, int64(20000)); err != nil || r.code != 0 {
		t.Fatalf("set lease of a released id: %+v, %v; want code 0", r, err)
	}
}
