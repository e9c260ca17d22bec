package names

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzKeyEncoding searches for two (name, key) pairs whose keyed semaphores
// share a Redis name or a local map entry, or for a keyed semaphore's Redis
// name that is also a valid plain name (redissem.New). Any such pair would let
// a client-chosen key address another semaphore. It also checks that a key
// shown readable in Redis decodes back to itself (so the escaping is
// injective on its own), and that every key whose escape fits is shown so.
// Run longer with
//
//	go test -run '^$' -fuzz '^FuzzKeyEncoding$' -fuzztime 10m ./core/internal/names/
func FuzzKeyEncoding(f *testing.F) {
	f.Add("X", "tenant:vip", "X:tenant", "vip")
	f.Add("Y", "admin:export", "Y:admin", "export")
	f.Add("a", "#0123", "a", "")
	f.Add("a", strings.Repeat("k", MaxKeyLen+1), "a", "b0a2ac0b6b2b1f69e5f0bb5ab1d6bb2ad1bc0de7b3bc35d51fe6f4a6c53d8a02")
	f.Add("n", "x{y}z", "n", "x y")
	f.Add("r", "GET /users/{id}", "r", "GET%20/users/%7Bid%7D")
	f.Add("r", "a b", "r", "a%20b")
	f.Add("r", "#", "r", "%23")
	f.Add("r", strings.Repeat(" ", 21), "r", strings.Repeat(" ", 22))
	f.Fuzz(func(t *testing.T, name1, key1, name2, key2 string) {
		if CheckName(name1) != nil || CheckName(name2) != nil {
			return
		}
		id1, id2 := NewKeyID(key1), NewKeyID(key2)
		if (id1 == id2) != (key1 == key2) {
			t.Fatalf("local map: keys %q and %q: ids equal = %v", key1, key2, id1 == id2)
		}
		r1, r2 := id1.Name(name1), id2.Name(name2)
		if (r1 == r2) != (name1 == name2 && key1 == key2) {
			t.Fatalf("Redis names of (%q, %q) and (%q, %q): %q, %q", name1, key1, name2, key2, r1, r2)
		}
		for _, r := range []string{r1, r2} {
			if CheckName(r) == nil {
				t.Fatalf("keyed Redis name %q is also a valid plain name", r)
			}
			// The name goes between '{' and '}': it must not end the tag.
			if strings.ContainsAny(r, "{}") || len(r) > len(name1)+len(name2)+66 {
				t.Fatalf("keyed Redis name %q breaks the hash tag or is unbounded", r)
			}
			// The name ends at the first '#': decoding it gives back the
			// name of the keyed semaphore.
			if n, _, _ := strings.Cut(r, "#"); n != name1 && n != name2 {
				t.Fatalf("Redis name %q does not start with its keyed name", r)
			}
		}
		for _, k := range []string{key1, key2} {
			part := NewKeyID(k).Name("")[1:]
			if strings.HasPrefix(part, "#") {
				if k != "" && len(k) <= MaxKeyLen && EscapedLen(k) <= MaxEscapedLen {
					t.Fatalf("key %q hashed (%q), though its escape fits", k, part)
				}
				continue
			}
			if strings.ContainsFunc(part, func(r rune) bool { return r != '%' && (r > 0x7f || !KeptByte(byte(r))) }) {
				t.Fatalf("key %q shown as %q, with a byte that should be escaped", k, part)
			}
			if got, ok := unescape(part); !ok || got != k {
				t.Fatalf("key %q shown as %q, which decodes to %q (ok %v)", k, part, got, ok)
			}
		}
		if l := id1.Keep().Label(key1); len(l) > MaxKeyLen || (len(key1) <= MaxKeyLen && l != key1) {
			t.Fatalf("label of a %d-byte key: %q", len(key1), l)
		}
	})
}

// unescape undoes Escape, strictly: false unless s is exactly the
// escape of some key (kept bytes as they are, every other byte as '%' and
// two upper-case hex digits).
func unescape(s string) (string, bool) {
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if KeptByte(c) {
			b = append(b, c)
			continue
		}
		if c != '%' || i+2 >= len(s) {
			return "", false
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil || s[i+1:i+3] != strings.ToUpper(s[i+1:i+3]) || KeptByte(byte(v)) {
			return "", false
		}
		b = append(b, byte(v))
		i += 2
	}
	return string(b), true
}
