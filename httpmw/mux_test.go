package httpmw_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/httpmw"
	"github.com/distsem/distsem/internal/servertest"
)

// Around a whole ServeMux the route pattern is resolved first; requests no
// route matches (404, 405, redirects) take no permit and create no key,
// whatever path the client invents.
func TestWrapMuxKeysByPattern(t *testing.T) {
	sem := core.NewLocalKeyed(100, core.WithLimits(map[string]int64{"GET /item/{id}": 1}))
	g := newGate()
	mux := http.NewServeMux()
	mux.Handle("GET /item/{id}", g)
	mux.Handle("GET /dir/", http.NotFoundHandler())
	srv := httptest.NewServer(httpmw.Limit(sem)(mux))
	defer srv.Close()

	res := make(chan result, 1)
	go func() { res <- get(t, srv.Client(), srv.URL+"/item/1") }()
	<-g.entered
	if got := servertest.InUse(t, sem, "GET /item/{id}"); got != 1 {
		t.Errorf("in use under the pattern = %d, want 1", got)
	}
	// Another path of the same pattern shares its limit.
	second := make(chan result, 1)
	go func() { second <- get(t, srv.Client(), srv.URL+"/item/2") }()
	select {
	case r := <-second:
		if r.code != 429 {
			t.Errorf("GET /item/2 while /item/1 holds the pattern's permit: %+v, want 429", r)
		}
	case <-g.entered:
		t.Error("GET /item/2 ran while /item/1 held the pattern's only permit")
	}
	close(g.open)
	<-res

	noFollow := *srv.Client()
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for i, c := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/nothing/here", 404},
		{"POST", "/item/1", 405},
		{"GET", "/dir", 307},         // trailing-slash redirect
		{"GET", "/x/../item/3", 307}, // path-cleaning redirect
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path+"?n="+string(rune('a'+i)), nil)
		req.URL.Opaque = c.path // keep "/x/../" from being cleaned by the client
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.code)
		}
	}
	if n := sem.Len(); n != 1 {
		t.Fatalf("%d keys kept after unmatched requests, want 1 (the pattern's)", n)
	}
}

// A middleware around a handler that is not a ServeMux, outside any mux,
// keys every request by UnroutedKey, never by the client's path.
func TestUnroutedKey(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	g := newGate()
	srv := httptest.NewServer(httpmw.Handler(g, sem))
	defer srv.Close()
	res := make(chan result, 1)
	go func() { res <- get(t, srv.Client(), srv.URL+"/a") }()
	<-g.entered
	second := make(chan result, 1)
	go func() { second <- get(t, srv.Client(), srv.URL+"/b") }()
	select {
	case r := <-second:
		if r.code != 429 {
			t.Errorf("/b: %+v, want 429: both paths share UnroutedKey", r)
		}
	case <-g.entered:
		t.Error("/b ran while /a held the only permit: keyed by path")
	}
	if got := servertest.InUse(t, sem, httpmw.UnroutedKey); got != 1 {
		t.Errorf("in use under UnroutedKey = %d, want 1", got)
	}
	close(g.open)
	<-res
}

// A limited ServeMux mounted under another one is keyed by its own
// patterns, not by the outer route ("/api/") that the outer mux already
// wrote into Request.Pattern.
func TestNestedMuxKeysByInnerPattern(t *testing.T) {
	sem := core.NewLocalKeyed(100, core.WithLimits(map[string]int64{"GET /item/{id}": 1}))
	g := newGate()
	inner := http.NewServeMux()
	inner.Handle("GET /item/{id}", g)
	outer := http.NewServeMux()
	outer.Handle("/api/", http.StripPrefix("/api", httpmw.Limit(sem)(inner)))
	srv := httptest.NewServer(outer)
	defer srv.Close()

	res := make(chan result, 1)
	go func() { res <- get(t, srv.Client(), srv.URL+"/api/item/1") }()
	<-g.entered
	if got := servertest.InUse(t, sem, "GET /item/{id}"); got != 1 {
		t.Errorf("in use under the inner pattern = %d, want 1", got)
	}
	second := make(chan result, 1)
	go func() { second <- get(t, srv.Client(), srv.URL+"/api/item/2") }()
	select {
	case r := <-second:
		if r.code != 429 {
			t.Errorf("GET /api/item/2 while /api/item/1 holds the inner route's permit: %+v, want 429", r)
		}
	case <-g.entered:
		t.Error("GET /api/item/2 ran while /api/item/1 held the inner route's only permit: keyed by the outer pattern")
	}
	close(g.open)
	<-res
	if got := servertest.InUse(t, sem, "/api/"); got != 0 {
		t.Errorf("in use under the outer pattern = %d, want 0", got)
	}
}
