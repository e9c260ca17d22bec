package httpmw_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/httpmw"
	"github.com/distsem/distsem/internal/servertest"
)

func TestMain(m *testing.M) {
	if serveChild() { // see process_test.go
		return
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(servertest.Exit))
}

// gate is a handler that counts the requests inside it and holds each one
// until open is closed.
type gate struct {
	in, max atomic.Int64
	entered chan struct{}
	open    chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 100), open: make(chan struct{})} }

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := g.in.Add(1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			break
		}
	}
	g.entered <- struct{}{}
	<-g.open
	g.in.Add(-1)
	io.WriteString(w, "ok")
}

// events forwards the observer events of one kind to a channel.
func events(kind admit.EventKind) (admit.Observer, chan admit.Event) {
	ch := make(chan admit.Event, 100)
	return admit.ObserverFunc(func(e admit.Event) {
		if e.Kind == kind {
			ch <- e
		}
	}), ch
}

type result struct {
	code       int
	retryAfter string
	body       string
}

func get(t *testing.T, c *http.Client, url string) result {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Error(err)
		return result{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{resp.StatusCode, resp.Header.Get("Retry-After"), string(b)}
}

func TestLimitPerRoute(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []httpmw.Option
		code   int
		retry  string
		body   string
		status int
	}{
		{"default 429", nil, 429, "1", "Too Many Requests\n", 0},
		{"503 no retry-after", []httpmw.Option{httpmw.WithStatus(503), httpmw.WithRetryAfter(admit.NoRetryAfter)}, 503, "", "Service Unavailable\n", 0},
		{"retry-after rounds up", []httpmw.Option{httpmw.WithRetryAfter(1500 * time.Millisecond)}, 429, "2", "Too Many Requests\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const limit, clients = 3, 10
			sem := core.NewLocalKeyed(100, core.WithLimits(map[string]int64{"GET /work": limit}))
			work, other := newGate(), newGate()
			limited := httpmw.Limit(sem, tc.opts...)
			mux := http.NewServeMux()
			mux.Handle("GET /work", limited(work))
			mux.Handle("GET /other/{id}", limited(other))
			srv := httptest.NewServer(mux)
			defer srv.Close()

			results := make(chan result, clients)
			var wg sync.WaitGroup
			for range clients {
				wg.Go(func() { results <- get(t, srv.Client(), srv.URL+"/work") })
			}
			// limit requests get in; the others are rejected at once.
			for range limit {
				<-work.entered
			}
			for range clients - limit {
				r := <-results
				if r.code != tc.code || r.retryAfter != tc.retry || r.body != tc.body {
					t.Errorf("rejection = %+v, want %d, Retry-After %q, body %q", r, tc.code, tc.retry, tc.body)
				}
			}
			if got := servertest.InUse(t, sem, "GET /work"); got != limit {
				t.Errorf("in use = %d, want %d", got, limit)
			}
			// Another route has its own limit: keyed by pattern, not path.
			close(other.open)
			for i := range 5 {
				if r := get(t, srv.Client(), srv.URL+"/other/"+string(rune('a'+i))); r.code != 200 {
					t.Errorf("GET /other: %+v while /work is saturated", r)
				}
			}
			close(work.open)
			wg.Wait()
			for range limit {
				if r := <-results; r.code != 200 {
					t.Errorf("admitted request: %+v", r)
				}
			}
			if m := work.max.Load(); m != limit {
				t.Errorf("max in flight = %d, want %d", m, limit)
			}
			if got := servertest.InUse(t, sem, "GET /work"); got != 0 {
				t.Errorf("in use after = %d, want 0", got)
			}
		})
	}
}

func TestWaitThenAdmit(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	obs, queued := events(admit.EventQueued)
	g := newGate()
	srv := httptest.NewServer(httpmw.Handler(g, sem, httpmw.WithMaxWait(time.Minute), httpmw.WithObserver(obs)))
	defer srv.Close()
	first := make(chan result, 1)
	go func() { first <- get(t, srv.Client(), srv.URL) }()
	<-g.entered
	second := make(chan result, 1)
	go func() { second <- get(t, srv.Client(), srv.URL) }()
	<-queued // the second request waits
	close(g.open)
	if r1, r2 := <-first, <-second; r1.code != 200 || r2.code != 200 {
		t.Fatalf("results %+v %+v, want both 200", r1, r2)
	}
	if got := servertest.InUse(t, sem, httpmw.UnroutedKey); got != 0 {
		t.Fatalf("in use = %d, want 0", got)
	}
}

func TestWaitTimesOut(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	g := newGate()
	srv := httptest.NewServer(httpmw.Handler(g, sem, httpmw.WithMaxWait(20*time.Millisecond)))
	defer srv.Close()
	first := make(chan result, 1)
	go func() { first <- get(t, srv.Client(), srv.URL) }()
	<-g.entered
	if r := get(t, srv.Client(), srv.URL); r.code != 429 || r.retryAfter != "1" {
		t.Fatalf("waited out: %+v, want 429", r)
	}
	close(g.open)
	<-first
}

func TestMaxWaitingFull(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	obs, queued := events(admit.EventQueued)
	g := newGate()
	srv := httptest.NewServer(httpmw.Handler(g, sem, httpmw.WithMaxWait(time.Minute),
		httpmw.WithMaxWaiting(1), httpmw.WithObserver(obs)))
	defer srv.Close()
	res := make(chan result, 2)
	go func() { res <- get(t, srv.Client(), srv.URL) }()
	<-g.entered
	go func() { res <- get(t, srv.Client(), srv.URL) }()
	<-queued
	if r := get(t, srv.Client(), srv.URL); r.code != 429 {
		t.Fatalf("third request: %+v, want 429 at once", r)
	}
	close(g.open)
	<-res
	<-res
}

func TestBackendUnavailable(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	sem.Close()
	var called atomic.Bool
	srv := httptest.NewServer(httpmw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called.Store(true) }), sem))
	defer srv.Close()
	r := get(t, srv.Client(), srv.URL)
	if r.code != 503 || r.retryAfter != "1" || r.body != "Service Unavailable\n" || called.Load() {
		t.Fatalf("closed semaphore: %+v (handler called %v), want a bare 503", r, called.Load())
	}
}

// recorder is a ResponseWriter that notes whether anything was written.
type recorder struct {
	h       http.Header
	written bool
}

func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) Write(b []byte) (int, error) { r.written = true; return len(b), nil }
func (r *recorder) WriteHeader(int)             { r.written = true }

func TestClientGoneWhileWaiting(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	obs, queued := events(admit.EventQueued)
	robs, rejected := events(admit.EventRejected)
	g := newGate()
	h := httpmw.Handler(g, sem, httpmw.WithMaxWait(time.Minute),
		httpmw.WithObserver(admit.ObserverFunc(func(e admit.Event) { obs.Observe(e); robs.Observe(e) })))

	// Over a real connection: the client gives up while queued.
	srv := httptest.NewServer(h)
	defer srv.Close()
	go get(t, srv.Client(), srv.URL)
	<-g.entered
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		_, err := srv.Client().Do(req)
		done <- err
	}()
	<-queued
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("client error = %v", err)
	}
	if e := <-rejected; e.Reason != admit.ClientGone {
		t.Fatalf("rejection reason = %v, want client_gone", e.Reason)
	}

	// Directly, to see that nothing at all is written.
	w := &recorder{h: http.Header{}}
	ctx2, cancel2 := context.WithCancel(t.Context())
	go func() { <-queued; cancel2() }()
	req := httptest.NewRequestWithContext(ctx2, "GET", "/", nil)
	h.ServeHTTP(w, req)
	if w.written || len(w.h) != 0 {
		t.Fatalf("wrote a response (headers %v) to a client that went away", w.h)
	}
	if e := <-rejected; e.Reason != admit.ClientGone {
		t.Fatalf("rejection reason = %v, want client_gone", e.Reason)
	}
	close(g.open)
	srv.Close() // waits for the holder's request
	if got := servertest.InUse(t, sem, httpmw.UnroutedKey); got != 0 {
		t.Fatalf("in use = %d, want 0", got)
	}
}

func TestPanicReleases(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	boom := errors.New("boom")
	h := httpmw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(boom) }), sem)
	func() {
		defer func() {
			if v := recover(); v != boom {
				t.Fatalf("recovered %v, want the handler's panic", v)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}()
	if got := servertest.InUse(t, sem, httpmw.UnroutedKey); got != 0 {
		t.Fatalf("in use after panic = %d, want 0", got)
	}
	// Through a server (http.ErrAbortHandler is not logged).
	srv := httptest.NewServer(httpmw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler)
	}), sem))
	defer srv.Close()
	for range 3 {
		if _, err := srv.Client().Get(srv.URL); err == nil {
			t.Fatal("the aborted request succeeded")
		}
	}
	if got := servertest.InUse(t, sem, httpmw.UnroutedKey); got != 0 {
		t.Fatalf("in use after aborts = %d, want 0", got)
	}
}

func TestRejectHandlerAndKey(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	var gotKey string
	h := httpmw.Handler(newGate(), sem,
		httpmw.WithKey(func(r *http.Request) string { return r.Header.Get("Tenant") }),
		httpmw.WithRejectHandler(func(w http.ResponseWriter, r *http.Request, code int, rej *admit.Rejection) {
			gotKey = rej.Key
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			io.WriteString(w, `{"error":"busy"}`)
		}))
	tk, _ := sem.Acquire(t.Context(), "acme") // saturate tenant acme
	defer tk.Release(t.Context())
	w := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Tenant", "acme")
	h.ServeHTTP(w, req)
	if w.Code != 429 || w.Body.String() != `{"error":"busy"}` || w.Header().Get("Retry-After") != "1" || gotKey != "acme" {
		t.Fatalf("got %d %q %v key %q", w.Code, w.Body, w.Header(), gotKey)
	}
}

func TestGlobalLimit(t *testing.T) {
	local := core.NewLocal(1)
	g := newGate()
	mux := http.NewServeMux()
	limit := httpmw.Limit(admit.Global(local))
	mux.Handle("/a", limit(g))
	mux.Handle("/b", limit(g))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res := make(chan result, 1)
	go func() { res <- get(t, srv.Client(), srv.URL+"/a") }()
	<-g.entered
	if r := get(t, srv.Client(), srv.URL+"/b"); r.code != 429 {
		t.Fatalf("/b under a global limit of 1: %+v, want 429", r)
	}
	close(g.open)
	<-res
}

func TestLimitPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"nil sem":    func() { httpmw.Limit(nil) },
		"bad status": func() { httpmw.Limit(core.NewLocalKeyed(1), httpmw.WithStatus(200)) },
		"bad retry":  func() { httpmw.Limit(core.NewLocalKeyed(1), httpmw.WithRetryAfter(-time.Second)) },
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
