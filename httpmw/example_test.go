package httpmw_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/httpmw"
)

func ExampleLimit() {
	// GET /work may run 1 at a time; every other route 100.
	sem := core.NewLocalKeyed(100, core.WithLimits(map[string]int64{"GET /work": 1}))
	limit := httpmw.Limit(sem, httpmw.WithRetryAfter(2*time.Second))

	mux := http.NewServeMux()
	mux.Handle("GET /work", limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "done\n")
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// Someone holds the route's only permit.
	p, _ := sem.Acquire(context.Background(), "GET /work")
	resp, _ := http.Get(srv.URL + "/work")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"), string(body))

	p.Release(context.Background())
	resp, _ = http.Get(srv.URL + "/work")
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 429 2 Too Many Requests
	//
	// 200 done
}

func ExampleHandler() {
	// One global limit of 8 over a whole handler, 503 when it is reached.
	h := httpmw.Handler(http.NotFoundHandler(), admit.Global(core.NewLocal(8)),
		httpmw.WithStatus(http.StatusServiceUnavailable),
		httpmw.WithMaxWait(100*time.Millisecond))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code)
	// Output: 404
}

func ExampleWithRejectHandler() {
	sem := core.NewLocalKeyed(1)
	h := httpmw.Handler(http.NotFoundHandler(), sem,
		httpmw.WithRejectHandler(func(w http.ResponseWriter, r *http.Request, code int, rej *admit.Rejection) {
			if code == 0 {
				return // the client went away
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"error":%q}`, rej.Reason)
		}))
	p, _ := sem.Acquire(context.Background(), httpmw.UnroutedKey)
	defer p.Release(context.Background())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code, rec.Body)
	// Output: 429 {"error":"no_capacity"}
}
