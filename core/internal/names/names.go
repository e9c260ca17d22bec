// Package names holds the text rules of core: how a key appears in Redis
// names, which semaphore names are valid, and which notes and owners are.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sep separates a keyed semaphore's name from the encoding of its key in
// the name of the key's semaphore. Plain names must not contain it.
const Sep = '#'

// MaxEscapedLen is the longest escaped key that names show as it is; a
// longer one is hashed.
const MaxEscapedLen = 64

// Part returns how a key of at most core.MaxKeyLen bytes appears in names:
// the key escaped (see Escape) when that is 1 to MaxEscapedLen bytes, else
// Hash(key). The escaped form never contains '#', the hashed one starts
// with it, so the encoding is injective (up to a collision of the hash)
// and never breaks a {hash tag}.
func Part(key string) string {
	if n := EscapedLen(key); n > 0 && n <= MaxEscapedLen {
		return Escape(key, n)
	}
	return Hash(key)
}

// Hash returns '#' and 32 hex digits (128 bits) of key's SHA-256.
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "#" + hex.EncodeToString(sum[:16])
}

// KeptByte reports whether a key's byte c appears in names as it is:
// [A-Za-z0-9._/:-]. Every other byte ('%' itself, white space, '#', '{',
// '}', non-ASCII) is escaped.
func KeptByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-/:", c) >= 0
}

// EscapedLen is the length of Escape(key).
func EscapedLen(key string) int {
	n := len(key)
	for i := 0; i < len(key); i++ {
		if !KeptByte(key[i]) {
			n += 2
		}
	}
	return n
}

// Escape returns key with each byte that KeptByte rejects written as '%'
// and two upper-case hex digits, as in a URL: "GET /users/{id}" is
// "GET%20/users/%7Bid%7D". Since '%' is escaped too, distinct keys have
// distinct escapes; a key with nothing to escape is returned as it is. n
// is EscapedLen(key).
func Escape(key string, n int) string {
	if n == len(key) {
		return key
	}
	const hexDigits = "0123456789ABCDEF"
	b := make([]byte, 0, n)
	for i := 0; i < len(key); i++ {
		if c := key[i]; KeptByte(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
		}
	}
	return string(b)
}

// CheckName says why name is not a valid plain semaphore name: it must
// not be empty nor contain '{', '}', '#' (Sep) or white space.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("core: semaphore name must not be empty")
	}
	if strings.IndexFunc(name, func(r rune) bool { return r == '{' || r == '}' || r == Sep || unicode.IsSpace(r) }) >= 0 {
		return fmt.Errorf("core: semaphore name %q must not contain '{', '}', '#' or white space", name)
	}
	return nil
}

// CheckText returns why s is not a valid note or owner of at most max
// bytes, or "" if it is.
func CheckText(s string, max int) string {
	if len(s) > max {
		return fmt.Sprintf("%d bytes, more than %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "has a control character"
		}
	}
	return ""
}

// Owner returns "<host>:<pid>": the host name (os.Hostname, or "unknown")
// and the process id, cut to its last max bytes.
func Owner(max int) string {
	host, err := os.Hostname()
	if err != nil || host == "" || CheckText(host, max) != "" {
		host = "unknown"
	}
	o := host + ":" + strconv.Itoa(os.Getpid())
	if len(o) > max {
		o = o[len(o)-max:]
	}
	return o
}
