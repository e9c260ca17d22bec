package adaptertest

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/echomw"
	"github.com/distsem/distsem/grpcmw"
	"github.com/distsem/distsem/httpmw"
	"github.com/distsem/distsem/sqlmw"
)

// vocab is one set of the settings every adapter shares.
type vocab struct {
	MaxWait, RetryAfter, ReleaseTimeout time.Duration
	MaxWaiting                          int
}

// outcome is what one request got: "admitted" or a rejection reason, and
// the retry hint sent (0 for none).
type outcome struct {
	result string
	hint   time.Duration
}

// adapter runs requests of key through one adapter built with a vocab.
type adapter struct {
	name  string
	key   string
	hints bool // whether the adapter sends retry hints
	build func(t *testing.T, sem core.KeyedSemaphore, v vocab) func(ctx context.Context) outcome
}

var adapters = []adapter{
	{"httpmw", httpmw.UnroutedKey, true, func(_ *testing.T, sem core.KeyedSemaphore, v vocab) func(context.Context) outcome {
		h := httpmw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }),
			sem, httpmw.WithMaxWait(v.MaxWait), httpmw.WithMaxWaiting(v.MaxWaiting),
			httpmw.WithReleaseTimeout(v.ReleaseTimeout), httpmw.WithRetryAfter(v.RetryAfter))
		return func(ctx context.Context) outcome {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "GET", "/k", nil))
			return httpOutcome(rec)
		}
	}},
	{"echomw", "GET /k", true, func(_ *testing.T, sem core.KeyedSemaphore, v vocab) func(context.Context) outcome {
		e := echo.New()
		e.GET("/k", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) },
			echomw.LimitWithConfig(echomw.Config{Semaphore: sem, MaxWait: v.MaxWait, MaxWaiting: v.MaxWaiting,
				ReleaseTimeout: v.ReleaseTimeout, RetryAfter: v.RetryAfter}))
		return func(ctx context.Context) outcome {
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "GET", "/k", nil))
			return httpOutcome(rec)
		}
	}},
	{"grpcmw", "/t.T/K", true, func(_ *testing.T, sem core.KeyedSemaphore, v vocab) func(context.Context) outcome {
		icpt := grpcmw.UnaryServerInterceptor(sem, grpcmw.WithMaxWait(v.MaxWait), grpcmw.WithMaxWaiting(v.MaxWaiting),
			grpcmw.WithReleaseTimeout(v.ReleaseTimeout), grpcmw.WithRetryAfter(v.RetryAfter))
		info := &grpc.UnaryServerInfo{FullMethod: "/t.T/K"}
		return func(ctx context.Context) outcome {
			_, err := icpt(ctx, nil, info, func(context.Context, any) (any, error) { return nil, nil })
			var o outcome
			for _, d := range status.Convert(err).Details() {
				if ri, ok := d.(*errdetails.RetryInfo); ok {
					o.hint = ri.GetRetryDelay().AsDuration()
				}
			}
			switch status.Code(err) {
			case codes.OK:
				o.result = "admitted"
			case codes.ResourceExhausted:
				o.result = "no_capacity"
			case codes.Unavailable:
				o.result = "unavailable"
			case codes.Canceled, codes.DeadlineExceeded:
				o.result = "client_gone"
			default:
				o.result = err.Error()
			}
			return o
		}
	}},
	{"sqlmw", "k", false, func(t *testing.T, sem core.KeyedSemaphore, v vocab) func(context.Context) outcome {
		db := sqlmw.OpenDB(fakeConnector{}, nil, sqlmw.WithKeyed(sem, func(context.Context, string) string { return "k" }),
			sqlmw.WithMaxWait(v.MaxWait), sqlmw.WithMaxWaiting(v.MaxWaiting), sqlmw.WithReleaseTimeout(v.ReleaseTimeout))
		t.Cleanup(func() { db.Close() })
		return func(ctx context.Context) outcome {
			_, err := db.ExecContext(ctx, "UPDATE t SET x = 1")
			switch {
			case err == nil:
				return outcome{result: "admitted"}
			case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
				return outcome{result: "client_gone"}
			case errors.Is(err, core.ErrNoPermit):
				return outcome{result: "no_capacity"}
			case errors.Is(err, core.ErrClosed), errors.Is(err, core.ErrUnavailable):
				return outcome{result: "unavailable"}
			}
			return outcome{result: err.Error()}
		}
	}},
}

func httpOutcome(rec *httptest.ResponseRecorder) outcome {
	var o outcome
	if s, err := strconv.Atoi(rec.Header().Get("Retry-After")); err == nil {
		o.hint = time.Duration(s) * time.Second
	}
	switch {
	case rec.Code == http.StatusNoContent:
		o.result = "admitted"
	case rec.Code == http.StatusTooManyRequests:
		o.result = "no_capacity"
	case rec.Code == http.StatusServiceUnavailable:
		o.result = "unavailable"
	case rec.Code == 499, rec.Code == http.StatusOK && rec.Body.Len() == 0: // nothing written
		o.result = "client_gone"
	default:
		o.result = fmt.Sprintf("status %d", rec.Code)
	}
	return o
}

// build runs a.build, turning a panic (a bad setting) into an error.
func build(t *testing.T, a adapter, sem core.KeyedSemaphore, v vocab) (do func(context.Context) outcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return a.build(t, sem, v), nil
}

// TestOneVocabulary runs every adapter through the same cases: each value
// of each setting means the same everywhere (see the package doc's table).
func TestOneVocabulary(t *testing.T) {
	type step int
	const (
		saturated    step = iota // a holder has the key's only permit throughout
		freeAfter                // the holder releases once the request is queued
		cancelAfter              // the request's ctx is cancelled once it is queued
		secondWaiter             // one request is queued; a second one is judged
		closed                   // the semaphore is closed
	)
	for _, tc := range []struct {
		name   string
		v      vocab
		step   step
		result string
		hint   time.Duration // for adapters that send hints
	}{
		{"MaxWait 0 rejects at once", vocab{}, saturated, "no_capacity", time.Second},
		{"MaxWait d runs out", vocab{MaxWait: 20 * time.Millisecond}, saturated, "no_capacity", time.Second},
		{"MaxWait d admits when freed", vocab{MaxWait: time.Minute}, freeAfter, "admitted", 0},
		{"WaitForever admits when freed", vocab{MaxWait: admit.WaitForever}, freeAfter, "admitted", 0},
		{"WaitForever ends with the request", vocab{MaxWait: admit.WaitForever}, cancelAfter, "client_gone", 0},
		{"NoWaiting rejects at once whatever MaxWait", vocab{MaxWait: time.Minute, MaxWaiting: admit.NoWaiting}, saturated, "no_capacity", time.Second},
		{"MaxWaiting 1 rejects the second waiter", vocab{MaxWait: time.Minute, MaxWaiting: 1}, secondWaiter, "no_capacity", time.Second},
		{"MaxWaiting 0 is the default, not none", vocab{MaxWait: time.Minute}, secondWaiter, "client_gone", 0},
		{"RetryAfter d", vocab{RetryAfter: 3 * time.Second}, saturated, "no_capacity", 3 * time.Second},
		{"NoRetryAfter", vocab{RetryAfter: admit.NoRetryAfter}, saturated, "no_capacity", 0},
		{"ReleaseTimeout 0 is the default", vocab{ReleaseTimeout: 0}, closed, "unavailable", time.Second},
	} {
		for _, a := range adapters {
			t.Run(tc.name+"/"+a.name, func(t *testing.T) {
				queued := make(chan struct{}, 4)
				sem := core.NewLocalKeyed(1, core.WithObserver(core.ObserverFunc(func(e core.Event) {
					if e.Kind == core.EventWait {
						queued <- struct{}{}
					}
				})))
				defer sem.Close()
				do, err := build(t, a, sem, tc.v)
				if err != nil {
					t.Fatal(err)
				}
				if tc.step == closed {
					sem.Close()
				}
				var held *core.Permit
				if tc.step != closed {
					if held, err = sem.Acquire(t.Context(), a.key); err != nil {
						t.Fatal(err)
					}
					defer held.Release(t.Context())
				}
				// A request that waits when it should not ends with this
				// generous deadline, as client_gone, rather than hang.
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				var got outcome
				switch tc.step {
				case saturated, closed:
					got = do(ctx)
				case freeAfter, cancelAfter:
					res := make(chan outcome, 1)
					go func() { res <- do(ctx) }()
					<-queued
					if tc.step == freeAfter {
						held.Release(t.Context())
					} else {
						cancel()
					}
					got = <-res
				case secondWaiter:
					first := make(chan outcome, 1)
					go func() { first <- do(ctx) }()
					<-queued
					// The second either is rejected at once or queues too;
					// cancelling both then ends a queued one as client_gone.
					second := make(chan outcome, 1)
					go func() { second <- do(ctx) }()
					select {
					case got = <-second:
					case <-queued:
						cancel()
						got = <-second
					}
					cancel()
					<-first
				}
				want := outcome{result: tc.result}
				if a.hints {
					want.hint = tc.hint
				}
				if got != want {
					t.Fatalf("got %+v, want %+v", got, want)
				}
				if held != nil {
					held.Release(t.Context())
					if st, _ := sem.Stats(t.Context(), a.key); st.InUse != 0 || st.Waiting != 0 {
						t.Fatalf("after the request: %+v, want nothing held or waiting", st)
					}
				}
			})
		}
	}
}

// Out-of-range values are refused by every adapter when it is built.
func TestVocabularyRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    vocab
		hint bool // only adapters with retry hints have RetryAfter
	}{
		{"MaxWait", vocab{MaxWait: -time.Second}, false},
		{"MaxWaiting", vocab{MaxWaiting: -2}, false},
		{"ReleaseTimeout", vocab{ReleaseTimeout: -time.Second}, false},
		{"RetryAfter", vocab{RetryAfter: -time.Second}, true},
	} {
		for _, a := range adapters {
			if tc.hint && !a.hints {
				continue
			}
			t.Run(tc.name+"/"+a.name, func(t *testing.T) {
				sem := core.NewLocalKeyed(1)
				defer sem.Close()
				if _, err := build(t, a, sem, tc.v); err == nil {
					t.Fatalf("%+v accepted", tc.v)
				}
			})
		}
	}
}

// A minimal database/sql driver: every statement but failQuery succeeds
// at once.
type (
	fakeConnector struct{}
	fakeDriver    struct{}
	fakeConn      struct{}
)

func (fakeConnector) Connect(context.Context) (driver.Conn, error) { return fakeConn{}, nil }
func (fakeConnector) Driver() driver.Driver                        { return fakeDriver{} }
func (fakeDriver) Open(string) (driver.Conn, error)                { return fakeConn{}, nil }
func (fakeConn) Prepare(string) (driver.Stmt, error)               { return nil, errors.New("not supported") }
func (fakeConn) Close() error                                      { return nil }
func (fakeConn) Begin() (driver.Tx, error)                         { return nil, errors.New("not supported") }
func (fakeConn) ExecContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Result, error) {
	if q == failQuery {
		return nil, errors.New("fake: query failed")
	}
	return driver.RowsAffected(1), nil
}

// failQuery is the one statement the fake driver fails.
const failQuery = "FAIL"

var _ driver.ExecerContext = fakeConn{}
