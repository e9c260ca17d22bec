package echomw_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.uber.org/goleak"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/echomw"
	"github.com/distsem/distsem/internal/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A real Echo server: per-route limits by route path, under concurrent
// clients.
func TestEchoServerPerRoute(t *testing.T) {
	const limit, clients = 2, 8
	sem := core.NewLocalKeyed(100, core.WithLimits(map[string]int64{"GET /work/{id}": limit}))
	entered, open := make(chan struct{}, clients), make(chan struct{})
	e := echo.New()
	e.Use(echomw.Limit(sem))
	e.GET("/work/:id", func(c echo.Context) error {
		entered <- struct{}{}
		<-open
		return c.String(http.StatusOK, "ok")
	})
	e.GET("/free", func(c echo.Context) error { return c.String(http.StatusOK, "free") })
	srv := httptest.NewServer(e)
	defer srv.Close()

	type result struct {
		code        int
		retry, body string
	}
	get := func(path string) result {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Error(err)
			return result{}
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return result{resp.StatusCode, resp.Header.Get("Retry-After"), string(b)}
	}
	results := make(chan result, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { results <- get("/work/" + string(rune('a'+i))) }) // distinct paths, one route
	}
	for range limit {
		<-entered
	}
	for range clients - limit {
		r := <-results
		if r.code != 429 || r.retry != "1" || r.body != "{\"message\":\"Too Many Requests\"}\n" {
			t.Errorf("rejection = %+v", r)
		}
	}
	if r := get("/free"); r.code != 200 {
		t.Errorf("/free while /work is saturated: %+v", r)
	}
	close(open)
	wg.Wait()
	for range limit {
		if r := <-results; r.code != 200 {
			t.Errorf("admitted: %+v", r)
		}
	}
	if got := servertest.InUse(t, sem, "GET /work/{id}"); got != 0 {
		t.Fatalf("in use = %d, want 0", got)
	}
}

// Table tests in the style of Echo's own: every rejection path.
func TestRejections(t *testing.T) {
	saturated := core.NewLocalKeyed(1)
	held, _ := saturated.Acquire(context.Background(), "GET /r")
	defer held.Release(context.Background())
	closed := core.NewLocalKeyed(1)
	closed.Close()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	badKey := errors.New("no tenant")

	for _, tc := range []struct {
		name   string
		config echomw.Config
		ctx    context.Context
		code   int
		retry  string
		cause  error // errors.Is target of echomw.Cause
	}{
		{"no capacity", echomw.Config{Semaphore: saturated}, nil, 429, "1", core.ErrNoPermit},
		{"no capacity 503", echomw.Config{Semaphore: saturated, RetryAfter: admit.NoRetryAfter,
			DenyHandler: func(echo.Context, string, error) error { return echo.ErrServiceUnavailable }},
			nil, 503, "", core.ErrNoPermit},
		{"retry-after rounds up", echomw.Config{Semaphore: saturated, RetryAfter: 2500 * time.Millisecond}, nil, 429, "3", core.ErrNoPermit},
		{"unavailable", echomw.Config{Semaphore: closed}, nil, 503, "1", core.ErrClosed},
		{"client gone", echomw.Config{Semaphore: saturated, MaxWait: time.Minute}, gone, middleware.StatusCodeContextCanceled, "", context.Canceled},
		{"key error", echomw.Config{Semaphore: saturated,
			KeyExtractor: func(echo.Context) (string, error) { return "", badKey }}, nil, 403, "", badKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := echo.New()
			req := httptest.NewRequest(http.MethodGet, "/r", nil)
			if tc.ctx != nil {
				req = req.WithContext(tc.ctx)
			}
			rec := httptest.NewRecorder()
			c := e.NewContext(req, rec)
			c.SetPath("/r")
			err := echomw.LimitWithConfig(tc.config)(func(echo.Context) error {
				t.Fatal("handler ran")
				return nil
			})(c)
			var he *echo.HTTPError
			if !errors.As(err, &he) || he.Code != tc.code || he.Internal != nil {
				t.Fatalf("err = %#v, want HTTPError %d with no internal error", err, tc.code)
			}
			if cause := echomw.Cause(c); !errors.Is(cause, tc.cause) {
				t.Fatalf("Cause = %v, want %v", cause, tc.cause)
			}
			if got := rec.Header().Get("Retry-After"); got != tc.retry {
				t.Fatalf("Retry-After = %q, want %q", got, tc.retry)
			}
			// Echo renders it without the internal error, also in debug
			// mode, which shows err.Error().
			e.Debug = true
			e.HTTPErrorHandler(err, c)
			if b := rec.Body.String(); strings.Contains(b, "core:") || strings.Contains(b, "admit:") ||
				strings.Contains(b, "internal") || strings.Contains(b, badKey.Error()) {
				t.Fatalf("body %q leaks internal error text", b)
			}
		})
	}
}

func TestClientGoneWhileWaiting(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	queued := make(chan struct{}, 1)
	obs := admit.ObserverFunc(func(e admit.Event) {
		if e.Kind == admit.EventQueued {
			queued <- struct{}{}
		}
	})
	held, _ := sem.Acquire(t.Context(), "GET /w")
	e := echo.New()
	mw := echomw.LimitWithConfig(echomw.Config{Semaphore: sem, MaxWait: time.Minute, Observer: obs})
	ctx, cancel := context.WithCancel(t.Context())
	c := e.NewContext(httptest.NewRequest("GET", "/w", nil).WithContext(ctx), httptest.NewRecorder())
	c.SetPath("/w")
	go func() { <-queued; cancel() }()
	err := mw(func(echo.Context) error { t.Fatal("handler ran"); return nil })(c)
	if he, ok := err.(*echo.HTTPError); !ok || he.Code != middleware.StatusCodeContextCanceled {
		t.Fatalf("err = %v, want 499", err)
	}
	held.Release(t.Context())
	if got := servertest.InUse(t, sem, "GET /w"); got != 0 {
		t.Fatalf("in use = %d, want 0", got)
	}
}

func TestPanicReleases(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	e := echo.New()
	e.Use(middleware.Recover(), echomw.Limit(sem))
	e.GET("/p", func(echo.Context) error { panic("boom") })
	srv := httptest.NewServer(e)
	defer srv.Close()
	for range 3 { // a leaked permit would make the second one a 429
		resp, err := srv.Client().Get(srv.URL + "/p")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 500 {
			t.Fatalf("status %d, want 500 from Recover", resp.StatusCode)
		}
	}
	if got := servertest.InUse(t, sem, "GET /p"); got != 0 {
		t.Fatalf("in use = %d, want 0", got)
	}
}

func TestSkipperAndBeforeFunc(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	held, _ := sem.Acquire(t.Context(), "GET /s")
	defer held.Release(t.Context())
	before := false
	mw := echomw.LimitWithConfig(echomw.Config{
		Semaphore:  sem,
		Skipper:    func(c echo.Context) bool { return c.Request().Header.Get("X-Internal") != "" },
		BeforeFunc: func(echo.Context) { before = true },
	})
	e := echo.New()
	req := httptest.NewRequest("GET", "/s", nil)
	req.Header.Set("X-Internal", "1")
	c := e.NewContext(req, httptest.NewRecorder())
	c.SetPath("/s")
	if err := mw(func(echo.Context) error { return nil })(c); err != nil || before {
		t.Fatalf("skipped request: %v (BeforeFunc ran: %v)", err, before)
	}
	c = e.NewContext(httptest.NewRequest("GET", "/s", nil), httptest.NewRecorder())
	c.SetPath("/s")
	if err := mw(func(echo.Context) error { return nil })(c); err == nil || !before {
		t.Fatalf("limited request: %v (BeforeFunc ran: %v)", err, before)
	}
}

func TestBadConfig(t *testing.T) {
	for name, cfg := range map[string]echomw.Config{
		"no semaphore":     {},
		"negative wait":    {Semaphore: core.NewLocalKeyed(1), MaxWait: -time.Second},
		"negative waiting": {Semaphore: core.NewLocalKeyed(1), MaxWaiting: -2},
		"negative retry":   {Semaphore: core.NewLocalKeyed(1), RetryAfter: -time.Second},
		"negative release": {Semaphore: core.NewLocalKeyed(1), ReleaseTimeout: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := cfg.ToMiddleware(); err == nil {
				t.Fatal("ToMiddleware accepted a bad config")
			}
			defer func() {
				if recover() == nil {
					t.Fatal("LimitWithConfig did not panic")
				}
			}()
			echomw.LimitWithConfig(cfg)
		})
	}
}
