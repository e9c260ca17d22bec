package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// MaxKeyLen is core.MaxKeyLen: the longest key kept as it is.
const MaxKeyLen = 256

// KeyID identifies a key in a keyed semaphore's map: the key itself, or
// the hex SHA-256 of a key longer than MaxKeyLen. hashed keeps the two
// apart, so a short key that happens to spell a hash is another key.
type KeyID struct {
	s      string
	hashed bool
}

// NewKeyID returns key's identity. It does not allocate for a short key.
func NewKeyID(key string) KeyID {
	if len(key) <= MaxKeyLen {
		return KeyID{s: key}
	}
	sum := sha256.Sum256([]byte(key))
	return KeyID{s: hex.EncodeToString(sum[:]), hashed: true}
}

// Keep returns id with its own copy of the bytes, so that a kept entry
// never pins a larger string (a request line, say) that the key was cut
// from.
func (id KeyID) Keep() KeyID { return KeyID{s: strings.Clone(id.s), hashed: id.hashed} }

// Label returns the name that observers, metrics, logs and error messages
// see for key: the key itself when it is at most MaxKeyLen bytes, else its
// first 64 bytes (cut at a rune boundary), "…#" and 16 hex digits of its
// SHA-256. It is at most MaxKeyLen bytes either way. id must be key's.
func (id KeyID) Label(key string) string {
	if !id.hashed {
		return id.s
	}
	n := 64
	for n > 0 && !utf8.RuneStart(key[n]) {
		n--
	}
	return strings.Clone(key[:n]) + "…#" + id.s[:16]
}

// Name returns the name of the key's semaphore in the keyed semaphore
// base: base + Sep + Part(key), or base + "##" + 32 hex digits of the
// SHA-256 of a key longer than MaxKeyLen (see core.Key.Name).
func (id KeyID) Name(base string) string {
	if id.hashed {
		return base + string(Sep) + "#" + id.s[:32]
	}
	return base + string(Sep) + Part(id.s)
}

// HashedName returns base + "##" + 32 hex digits of the key's SHA-256,
// whatever the key.
func (id KeyID) HashedName(base string) string {
	if id.hashed {
		return base + string(Sep) + "#" + id.s[:32]
	}
	return base + string(Sep) + Hash(id.s)
}
