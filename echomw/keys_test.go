package echomw_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/echomw"
	"github.com/distsem/distsem/httpmw"
)

// Echo routes are keyed "METHOD /path/{param}", as httpmw keys ServeMux
// patterns: GET and POST on one path are two limits, and an Echo service
// and a net/http service sharing one semaphore share the limit.
func TestRouteKeysMatchHTTPMW(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	entered, open := make(chan string, 4), make(chan struct{})
	hold := func(c echo.Context) error {
		entered <- c.Request().Method
		<-open
		return c.NoContent(http.StatusNoContent)
	}
	e := echo.New()
	e.Use(echomw.Limit(sem))
	e.GET("/users/:id", hold)
	e.POST("/users/:id", hold)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /users/{id}", func(w http.ResponseWriter, r *http.Request) {})
	nethttp := httpmw.Limit(sem)(mux)

	done := make(chan int, 2)
	for _, m := range []string{"GET", "POST"} {
		go func() {
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(m, "/users/1", nil))
			done <- rec.Code
		}()
	}
	release := sync.OnceFunc(func() { close(open) })
	defer release()
	// Both run at once with a limit of 1: two keys.
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case m := <-entered:
			got[m] = true
		case code := <-done:
			t.Fatalf("a request was answered %d while the other held its permit: GET and POST share a key", code)
		}
	}
	for _, k := range []string{"GET /users/{id}", "POST /users/{id}"} {
		if st, _ := sem.Stats(t.Context(), k); st.InUse != 1 {
			t.Errorf("key %q in use = %d, want 1", k, st.InUse)
		}
	}
	// The net/http service's route is the same key: saturated.
	rec := httptest.NewRecorder()
	nethttp.ServeHTTP(rec, httptest.NewRequest("GET", "/users/2", nil))
	if rec.Code != http.StatusTooManyRequests {
		t.Errorf("net/http GET /users/2 while Echo holds GET /users/{id}: %d, want 429", rec.Code)
	}
	release()
	<-done
	<-done
	n := sem.Len()

	// Requests that match no route (404, 405, an invented method) take no
	// permit and create no key.
	for _, r := range []struct {
		method, path string
		code         int
	}{{"GET", "/nothing", 404}, {"DELETE", "/users/1", 405}, {"BREW", "/users/1", 405}} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(r.method, r.path, nil))
		if rec.Code != r.code {
			t.Errorf("%s %s: %d, want %d", r.method, r.path, rec.Code, r.code)
		}
	}
	if sem.Len() != n {
		t.Errorf("unmatched requests created %d keys", sem.Len()-n)
	}
}

// With e.Debug set, Echo's error handler shows err.Error(): the rejection
// must carry no internal cause, which stays reachable through Cause.
func TestDebugModeShowsNoInternalText(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	held, _ := sem.Acquire(t.Context(), "GET /d")
	defer held.Release(t.Context())
	e := echo.New()
	e.Debug = true
	var cause error
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		cause = echomw.Cause(c) // what a logger would record
		e.DefaultHTTPErrorHandler(err, c)
	}
	e.GET("/d", func(echo.Context) error { return nil }, echomw.Limit(sem))
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest("GET", "/d", nil))
	body := rec.Body.String()
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429", rec.Code)
	}
	for _, leak := range []string{"internal", "admit", "core:", "permit"} {
		if strings.Contains(body, leak) {
			t.Fatalf("debug-mode body %q contains %q", body, leak)
		}
	}
	if !errors.Is(cause, core.ErrNoPermit) {
		t.Fatalf("Cause = %v, want the rejection (core.ErrNoPermit)", cause)
	}
}

// Any method on an e.Any route: the methods Echo knows are keyed, an
// invented one is Echo's 405 and takes no permit.
func TestAnyRouteInventedMethod(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	e := echo.New()
	e.Use(echomw.Limit(sem))
	e.Any("/any", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	for _, m := range []string{"GET", "PATCH", "BREW", strings.Repeat("X", 1000)} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(m, "/any", nil))
		t.Logf("%.10s: %d", m, rec.Code)
	}
	if n := sem.Len(); n > 2 {
		t.Fatalf("%d keys after GET, PATCH and two invented methods, want at most 2", n)
	}
}

func BenchmarkRouteKey(b *testing.B) {
	e := echo.New()
	c := e.NewContext(httptest.NewRequest("GET", "/users/1", nil), httptest.NewRecorder())
	c.SetPath("/users/:id")
	b.ReportAllocs()
	for b.Loop() {
		echomw.RouteKey(c)
	}
}
