package admit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/internal/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(servertest.Exit)) }

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []admit.Event
}

func (r *recorder) Observe(e admit.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) kinds() []admit.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []admit.EventKind
	for _, e := range r.events {
		ks = append(ks, e.Kind)
	}
	return ks
}

func rejection(t *testing.T, err error) *admit.Rejection {
	t.Helper()
	var rej *admit.Rejection
	if !errors.As(err, &rej) {
		t.Fatalf("error %v is not a *admit.Rejection", err)
	}
	return rej
}

func TestAdmitAndRelease(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	rec := &recorder{}
	ctl := admit.New(sem, admit.WithObserver(rec))
	tk, err := ctl.Acquire(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if tk.Key() != "a" || tk.Permit() == nil {
		t.Fatalf("ticket = %+v", tk)
	}
	if got := servertest.InUse(t, sem, "a"); got != 1 {
		t.Fatalf("in use = %d, want 1", got)
	}
	if err := tk.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := tk.Release(t.Context()); err != nil { // a second call does nothing
		t.Fatal(err)
	}
	if got := servertest.InUse(t, sem, "a"); got != 0 {
		t.Fatalf("in use after release = %d, want 0", got)
	}
	want := []admit.EventKind{admit.EventAdmitted, admit.EventReleased}
	if got := rec.kinds(); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	if err := (admit.Ticket{}).Release(t.Context()); err != nil {
		t.Fatalf("zero ticket release = %v", err)
	}
}

func TestNoWaitRejectsAtOnce(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	rec := &recorder{}
	ctl := admit.New(sem, admit.WithObserver(rec))
	tk, err := ctl.Acquire(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Release(t.Context())
	_, err = ctl.Acquire(t.Context(), "a")
	rej := rejection(t, err)
	if rej.Reason != admit.NoCapacity || !errors.Is(err, core.ErrNoPermit) || rej.Key != "a" {
		t.Fatalf("rejection = %+v (%v), want NoCapacity matching ErrNoPermit", rej, err)
	}
	// Another key has its own limit.
	tk2, err := ctl.Acquire(t.Context(), "b")
	if err != nil {
		t.Fatalf("key b: %v", err)
	}
	tk2.Release(t.Context())
	want := []admit.EventKind{admit.EventAdmitted, admit.EventRejected, admit.EventAdmitted, admit.EventReleased}
	if got := rec.kinds(); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

func TestWaitIsGrantedOnRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := core.NewLocalKeyed(1)
		rec := &recorder{}
		ctl := admit.New(sem, admit.WithMaxWait(time.Minute), admit.WithObserver(rec))
		held, err := ctl.Acquire(t.Context(), "k")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() {
			tk, err := ctl.Acquire(t.Context(), "k")
			if err == nil {
				err = tk.Release(t.Context())
			}
			done <- err
		}()
		synctest.Wait() // the second request is queued
		if n := ctl.Waiting("k"); n != 1 {
			t.Fatalf("waiting = %d, want 1", n)
		}
		time.Sleep(3 * time.Second) // fake time: the wait lasts 3s
		held.Release(t.Context())
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := ctl.Waiting("k"); n != 0 {
			t.Fatalf("waiting after = %d, want 0", n)
		}
		// The holder's EventReleased and the waiter's events race; count
		// them instead of ordering them.
		got := rec.kinds()
		slices.Sort(got)
		want := []admit.EventKind{admit.EventQueued, admit.EventDequeued, admit.EventAdmitted,
			admit.EventAdmitted, admit.EventReleased, admit.EventReleased}
		if !slices.Equal(got, want) {
			t.Fatalf("events = %v, want %v", got, want)
		}
		var waited, heldFor int
		for _, e := range rec.events {
			if e.Wait == 3*time.Second {
				switch e.Kind {
				case admit.EventAdmitted:
					waited++
				case admit.EventReleased:
					heldFor++
				}
			}
		}
		if waited != 1 || heldFor != 1 {
			t.Fatalf("want one 3s wait and one 3s hold: %+v", rec.events)
		}
	})
}

func TestMaxWaitPasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := core.NewLocalKeyed(1)
		ctl := admit.New(sem, admit.WithMaxWait(250*time.Millisecond))
		held, _ := ctl.Acquire(t.Context(), "k")
		defer held.Release(t.Context())
		start := time.Now()
		_, err := ctl.Acquire(t.Context(), "k")
		rej := rejection(t, err)
		if rej.Reason != admit.NoCapacity || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("rejection = %v, want NoCapacity after the deadline", err)
		}
		if d := time.Since(start); d != 250*time.Millisecond {
			t.Fatalf("waited %v, want 250ms", d)
		}
		if got := servertest.InUse(t, sem, "k"); got != 1 {
			t.Fatalf("in use = %d, want 1 (only the holder)", got)
		}
	})
}

func TestMaxWaitingRejectsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := core.NewLocalKeyed(1)
		ctl := admit.New(sem, admit.WithMaxWait(time.Minute), admit.WithMaxWaiting(1))
		heldK, _ := ctl.Acquire(t.Context(), "k")
		heldO, _ := ctl.Acquire(t.Context(), "other")
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		wait := func(key string) {
			_, err := ctl.Acquire(ctx, key)
			done <- err
		}
		go wait("k")
		synctest.Wait()
		start := time.Now()
		_, err := ctl.Acquire(t.Context(), "k")
		if rej := rejection(t, err); rej.Reason != admit.NoCapacity || !errors.Is(err, admit.ErrTooManyWaiting) {
			t.Fatalf("rejection = %v, want ErrTooManyWaiting", err)
		}
		if time.Since(start) != 0 {
			t.Fatal("a full queue must reject without waiting")
		}
		go wait("other") // another key has its own queue
		synctest.Wait()
		if n := ctl.Waiting("other"); n != 1 {
			t.Fatalf("waiting on other = %d, want 1", n)
		}
		cancel()
		for range 2 {
			if rej := rejection(t, <-done); rej.Reason != admit.ClientGone {
				t.Fatalf("waiter: %v, want ClientGone", rej)
			}
		}
		heldK.Release(t.Context())
		heldO.Release(t.Context())
		if n := ctl.Waiting("k") + ctl.Waiting("other"); n != 0 {
			t.Fatalf("waiting = %d, want 0", n)
		}
	})
}

func TestClientGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := core.NewLocalKeyed(1)
		rec := &recorder{}
		ctl := admit.New(sem, admit.WithMaxWait(time.Minute), admit.WithObserver(rec))
		held, _ := ctl.Acquire(t.Context(), "k")
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() {
			_, err := ctl.Acquire(ctx, "k")
			done <- err
		}()
		synctest.Wait()
		cancel()
		err := <-done
		if rej := rejection(t, err); rej.Reason != admit.ClientGone || !errors.Is(err, context.Canceled) {
			t.Fatalf("rejection = %v, want ClientGone wrapping context.Canceled", err)
		}
		held.Release(t.Context())
		if got := servertest.InUse(t, sem, "k"); got != 0 {
			t.Fatalf("in use = %d, want 0", got)
		}
		// A request whose context has already ended never takes a permit,
		// even a free one.
		_, err = ctl.Acquire(ctx, "k")
		if rej := rejection(t, err); rej.Reason != admit.ClientGone {
			t.Fatalf("rejection = %v, want ClientGone", err)
		}
		if got := servertest.InUse(t, sem, "k"); got != 0 {
			t.Fatalf("in use = %d, want 0", got)
		}
	})
}

func TestClientDeadlineShorterThanMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := core.NewLocalKeyed(1)
		ctl := admit.New(sem, admit.WithMaxWait(time.Minute))
		held, _ := ctl.Acquire(t.Context(), "k")
		defer held.Release(t.Context())
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := ctl.Acquire(ctx, "k")
		if rej := rejection(t, err); rej.Reason != admit.ClientGone {
			t.Fatalf("rejection = %v, want ClientGone: the request's own deadline passed", err)
		}
	})
}

func TestUnavailable(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	ctl := admit.New(sem)
	sem.Close()
	_, err := ctl.Acquire(t.Context(), "k")
	if rej := rejection(t, err); rej.Reason != admit.Unavailable || !errors.Is(err, core.ErrClosed) {
		t.Fatalf("rejection = %v, want Unavailable wrapping ErrClosed", err)
	}
	for _, cause := range []error{
		errors.New("dial tcp: connection refused"),
		context.DeadlineExceeded, // Redis silent for the operation timeout
	} {
		down := failing{fmt.Errorf("%w: acquire \"k\": %w", core.ErrUnavailable, cause)}
		_, err = admit.New(down, admit.WithMaxWait(time.Second)).Acquire(t.Context(), "k")
		if rej := rejection(t, err); rej.Reason != admit.Unavailable || !errors.Is(err, core.ErrUnavailable) {
			t.Errorf("backend failed with %v: rejection = %v (%v), want Unavailable", cause, rej.Reason, err)
		}
	}
}

// failing is a semaphore whose backend is down.
type failing struct{ err error }

func (f failing) Acquire(context.Context, string, ...core.AcquireOption) (*core.Permit, error) {
	return nil, f.err
}

func (f failing) TryAcquire(context.Context, string, ...core.AcquireOption) (*core.Permit, error) {
	return nil, f.err
}

func TestReleaseAfterCancel(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	ctl := admit.New(sem)
	ctx, cancel := context.WithCancel(t.Context())
	tk, err := ctl.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := tk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := servertest.InUse(t, sem, "k"); got != 0 {
		t.Fatalf("in use = %d, want 0", got)
	}
}

func TestGlobalSharesOneLimit(t *testing.T) {
	local := core.NewLocal(1)
	ctl := admit.New(admit.Global(local))
	tk, err := ctl.Acquire(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Acquire(t.Context(), "b"); rejection(t, err).Reason != admit.NoCapacity {
		t.Fatalf("key b: %v, want NoCapacity: the limit is global", err)
	}
	tk.Release(t.Context())
	st, _ := local.Stats(t.Context())
	if st.InUse != 0 {
		t.Fatalf("in use = %d, want 0", st.InUse)
	}
}

func TestNewPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"nil sem":     func() { admit.New(nil) },
		"nil global":  func() { admit.Global(nil) },
		"neg wait":    func() { admit.New(core.NewLocalKeyed(1), admit.WithMaxWait(-time.Second)) },
		"neg waiting": func() { admit.New(core.NewLocalKeyed(1), admit.WithMaxWaiting(-2)) },
		"neg timeout": func() { admit.New(core.NewLocalKeyed(1), admit.WithReleaseTimeout(-time.Second)) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}

func TestStrings(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{admit.NoCapacity.String(), "no_capacity"},
		{admit.Unavailable.String(), "unavailable"},
		{admit.ClientGone.String(), "client_gone"},
		{admit.EventLost.String(), "lost"},
		{(&admit.Rejection{Reason: admit.NoCapacity, Key: "k", Err: core.ErrNoPermit}).Error(),
			`admit: no_capacity for key "k": core: no permit available`},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// A client-chosen key cannot make a log line long.
func TestRejectionErrorBoundsKey(t *testing.T) {
	long := strings.Repeat("k", 1<<20)
	msg := (&admit.Rejection{Reason: admit.NoCapacity, Key: long, Err: core.ErrNoPermit}).Error()
	if len(msg) > 200 {
		t.Fatalf("Error() is %d bytes for a 1 MiB key", len(msg))
	}
}
