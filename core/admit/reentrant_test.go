package admit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
)

// TestTicketContextReenters: the ctx a Ticket gives a handler lets it
// acquire the same keyed semaphore again at limit 1 (nested, no wait), and
// the request's own ctx does not.
func TestTicketContextReenters(t *testing.T) {
	ctx := context.Background()
	base := core.NewLocalKeyed(1)
	defer base.Close()
	sem := core.ReentrantKeyed(base)
	ctl := admit.New(sem)
	tk, err := ctl.Acquire(ctx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	hctx := tk.Context(ctx)
	if core.PermitFromContext(hctx) != tk.Permit() {
		t.Fatal("Ticket.Context does not hold the ticket's permit")
	}
	p, err := sem.TryAcquire(hctx, "/a")
	if err != nil {
		t.Fatalf("handler could not reenter: %v", err)
	}
	if p.Token() != tk.Permit().Token() {
		t.Fatalf("nested token %d, ticket's %d", p.Token(), tk.Permit().Token())
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sem.TryAcquire(ctx, "/a"); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("the request's own ctx inherited the permit: %v", err)
	}
	if err := tk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := base.Stats(ctx, "/a"); st.InUse != 0 {
		t.Fatalf("in use after the ticket's release: %d", st.InUse)
	}
	if (admit.Ticket{}).Context(ctx) != ctx {
		t.Fatal("the zero Ticket changed the ctx")
	}
}
