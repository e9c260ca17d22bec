package promadmit_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/admit/promadmit"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/httpmw"
)

// The whole ServeMux is wrapped (health checks would wait on Redis too;
// the README limits only the routes that need it), and the route
// pattern "GET /work" (not the path) gets its limit of 4. Ten concurrent
// requests: four run, six are turned away at once.
func Example_httpmwServeMux() {
	mr, _ := miniredis.Run() // an embedded Redis; any redis.Client works
	defer mr.Close()
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer client.Close()

	routes := redissem.NewKeyed(client, "gateway", 64,
		redissem.WithLimits(map[string]int64{"GET /work": 4}))
	defer routes.Close()
	metrics := promadmit.New(promadmit.WithKeys("GET /work"))
	prometheus.NewRegistry().MustRegister(metrics)

	entered, finish := make(chan struct{}), make(chan struct{})
	work := func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-finish
		io.WriteString(w, "done")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /work", work)
	srv := httptest.NewServer(httpmw.Limit(routes,
		httpmw.WithMaxWait(100*time.Millisecond), httpmw.WithMaxWaiting(32),
		httpmw.WithObserver(metrics))(mux))
	defer srv.Close()

	const clients = 10
	codes := make(chan int, clients)
	for range clients {
		go func() {
			resp, err := http.Get(srv.URL + "/work")
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	// Every request either enters the handler or is turned away; only then
	// may the handlers finish, so all ten overlap.
	count := map[int]int{}
	for running := 0; running+count[429] < clients; {
		select {
		case <-entered:
			running++
		case c := <-codes:
			count[c]++
		}
	}
	close(finish)
	for range clients - count[429] {
		count[<-codes]++
	}
	fmt.Println(count)
	// Output: map[200:4 429:6]
}
