package httpmw_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/httpmw"
)

// TestHandlerReenters: a handler limited by the middleware calls code that
// acquires the same semaphore (limit 1, reentrant): it nests in the
// request's permit instead of waiting for itself.
func TestHandlerReenters(t *testing.T) {
	base := core.NewLocalKeyed(1)
	defer base.Close()
	sem := core.ReentrantKeyed(base)
	var token int64
	h := httpmw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		p, err := sem.Acquire(ctx, r.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer p.Release(ctx)
		token = p.Token()
	}), sem, httpmw.WithKey(func(r *http.Request) string { return r.URL.Path }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/a", nil))
	if rec.Code != http.StatusOK || token == 0 {
		t.Fatalf("status %d (%s), token %d", rec.Code, rec.Body, token)
	}
	if st, _ := base.Stats(context.Background(), "/a"); st.InUse != 0 {
		t.Fatalf("in use after the request: %d", st.InUse)
	}
}

// TestHandlerCtxHoldsPermit: the handler finds the request's permit in its
// ctx also when the semaphore is not reentrant (its token, for fencing).
// This is why the middleware copies the request (r.WithContext).
func TestHandlerCtxHoldsPermit(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	defer sem.Close()
	var got *core.Permit
	h := httpmw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = core.PermitFromContext(r.Context())
	}), sem)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/a", nil))
	if got == nil || got.Token() == 0 {
		t.Fatalf("permit in the handler's ctx: %v, want the request's", got)
	}
}
