package httpmw_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/httpmw"
)

// A route's Redis keys name the route: its pattern with the space and
// braces escaped (redis-cli --scan shows "distsem:{api#GET%20/users/%7Bid%7D}:h"),
// and distinct patterns, even ones differing only in an escaped byte, get
// distinct keys.
func TestRouteRedisKeys(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	sem := redissem.NewKeyed(rdb, "api", 4)
	defer sem.Close()

	// The handler records the hash tags of the keys in Redis while its
	// request holds the permit.
	held := map[string][]string{}
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var tags []string
		for _, k := range m.Keys() {
			if _, tag, ok := strings.Cut(k, "{"); ok && strings.HasSuffix(k, "}:h") {
				tags = append(tags, strings.TrimSuffix(tag, "}:h"))
			}
		}
		held[r.Pattern] = tags
	})
	limit := httpmw.Limit(sem)
	mux := http.NewServeMux()
	routes := map[string]string{ // pattern: a request it routes
		"GET /users/{id}":           "/users/7",
		"GET /users/{id}/posts":     "/users/7/posts",
		"GET /users/{id}/{rest...}": "/users/7/a/b",
		"POST /users/{id}":          "/users/7",
		"GET /users/%7Bid%7D":       "/users/%7Bid%7D", // the literal path /users/{id}
		"GET /work":                 "/work",
	}
	for pattern := range routes {
		mux.Handle(pattern, limit(record))
	}
	for pattern, path := range routes {
		method, _, _ := strings.Cut(pattern, " ")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s %s = %d, want 200 from %q", method, path, rec.Code, pattern)
		}
	}

	want := map[string]string{
		"GET /users/{id}":           "api#GET%20/users/%7Bid%7D",
		"GET /users/{id}/posts":     "api#GET%20/users/%7Bid%7D/posts",
		"GET /users/{id}/{rest...}": "api#GET%20/users/%7Bid%7D/%7Brest...%7D",
		"POST /users/{id}":          "api#POST%20/users/%7Bid%7D",
		"GET /users/%7Bid%7D":       "api#GET%20/users/%257Bid%257D",
		"GET /work":                 "api#GET%20/work",
	}
	seen := map[string]string{}
	for pattern, tag := range want {
		if !slices.Contains(held[pattern], tag) {
			t.Errorf("while %q held its permit, Redis had tags %q; want %q", pattern, held[pattern], tag)
		}
		if other, ok := seen[tag]; ok {
			t.Errorf("patterns %q and %q share the key %q", other, pattern, tag)
		}
		seen[tag] = pattern
	}
}
