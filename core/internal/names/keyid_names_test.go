package names

import (
	"strings"
	"testing"
)

// A key's Redis name is readable when its escape fits: route patterns,
// with their space and braces escaped, stay recognisable, while the name
// keeps within the hash tag (no '{' or '}') and a long key is still hashed.
func TestKeyNames(t *testing.T) {
	long := "GET /" + strings.Repeat("a", 59) // 64 bytes, escaped 66
	for _, c := range []struct{ key, want string }{
		{"tenant:vip", "api#tenant:vip"},
		{"GET /work", "api#GET%20/work"},
		{"GET /users/{id}", "api#GET%20/users/%7Bid%7D"},
		{"GET /users/{id...}", "api#GET%20/users/%7Bid...%7D"},
		{"example.com/static/", "api#example.com/static/"},
		{"/gateway.Work/Do", "api#/gateway.Work/Do"},
		{"100%", "api#100%25"},
		{"a#b", "api#a%23b"},
		{"café", "api#caf%C3%A9"},
		{"", "api##" + hashPart("")},
		{long, "api##" + hashPart(long)},
		{long[:62], "api#GET%20/" + strings.Repeat("a", 57)}, // escaped, exactly 64
	} {
		got := NewKeyID(c.key).Name("api")
		if got != c.want {
			t.Errorf("Name of %q = %q, want %q", c.key, got, c.want)
		}
		if strings.ContainsAny(got, "{} ") || len(got) > len("api#")+MaxEscapedLen {
			t.Errorf("Name of %q = %q: breaks the hash tag or is too long", c.key, got)
		}
	}
}

// Distinct route patterns, also ones that differ only in a byte that is
// escaped, or that spell another's escape, get distinct
func TestKeyNamesDistinct(t *testing.T) {
	keys := []string{
		"GET /users/{id}", "GET /users/{id}/", "GET /users/{id...}", "POST /users/{id}",
		"GET /users/%7Bid%7D", "GET%20/users/%7Bid%7D", "GET\t/users/{id}", "GET  /users/{id}",
		"GET /users/{id", "GET /users/id}", "/users/{id}", "GET /users/{ID}", "GET /users/[id]",
	}
	seen := map[string]string{}
	for _, k := range keys {
		n := NewKeyID(k).Name("api")
		if other, ok := seen[n]; ok {
			t.Errorf("keys %q and %q share the name %q", other, k, n)
		}
		seen[n] = k
	}
}

// hashPart is the 32 hex digits of a hashed key's name.
func hashPart(key string) string {
	n := NewKeyID(key).HashedName("")
	return strings.TrimPrefix(n, "##")
}
