package core

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"

	"github.com/distsem/distsem/core/internal/names"
)

// MaxKeyLen is the longest key, in bytes, that a keyed semaphore keeps as
// it is. A longer key (they come from requests: paths, tenant ids) is
// identified by its SHA-256 instead, so that memory stays bounded in bytes
// whatever the keys: in this process, in Redis, and in the labels that
// observers see (see Keyed). Two distinct keys always get distinct
// semaphores, short or long (up to a SHA-256 collision).
const MaxKeyLen = 256

// keyID identifies a key in a keyed semaphore's map: the key itself, or the
// hex SHA-256 of a key longer than MaxKeyLen. hashed keeps the two apart, so
// a short key that happens to spell a hash is another key.
type keyID struct {
	s      string
	hashed bool
}

// newKeyID returns key's identity. It does not allocate for a short key.
func newKeyID(key string) keyID {
	if len(key) <= MaxKeyLen {
		return keyID{s: key}
	}
	sum := sha256.Sum256([]byte(key))
	return keyID{s: hex.EncodeToString(sum[:]), hashed: true}
}

// keep returns id with its own copy of the bytes, so that a kept entry
// never pins a larger string (a request line, say) that the key was cut
// from.
func (id keyID) keep() keyID { return keyID{s: strings.Clone(id.s), hashed: id.hashed} }

// KeyLabel returns the name that observers see (Event.Name) for the key
// of a keyed semaphore: key itself when it is at most MaxKeyLen bytes, else
// its first 64 bytes, "…#" and 16 hex digits of its SHA-256. A collector
// that gives named keys series of their own matches events against it.
func KeyLabel(key string) string { return newKeyID(key).label(key) }

// label returns the name that observers, metrics, logs and error messages
// see for key: the key itself when it is at most MaxKeyLen bytes, else its
// first 64 bytes (cut at a rune boundary), "…#" and 16 hex digits of its
// SHA-256. It is at most MaxKeyLen bytes either way. id must be the kept
// id of key (see keep).
func (id keyID) label(key string) string {
	if !id.hashed {
		return id.s
	}
	n := 64
	for n > 0 && !utf8.RuneStart(key[n]) {
		n--
	}
	return strings.Clone(key[:n]) + "…#" + id.s[:16]
}

// redisPart returns how the key appears in Redis names: see Key.Name.
func (id keyID) redisPart() string {
	if id.hashed {
		return "#" + id.s[:32]
	}
	return names.Part(id.s)
}

// keyedName is the Redis name of key's semaphore in the keyed semaphore
// name: name + "#" + the key's redisPart. For example keyed "api" with key
// "tenant:vip" is "api#tenant:vip", with key "GET /users/{id}" it is
// "api#GET%20/users/%7Bid%7D", and with a key whose escape is longer than
// 64 bytes it is "api##" + 32 hex digits.
func keyedName(name string, id keyID) string {
	return name + string(names.Sep) + id.redisPart()
}

// checkName panics unless name is a valid plain semaphore name: not
// empty, and without '{', '}', '#' or white space.
func checkName(name string) {
	if err := names.CheckName(name); err != nil {
		panic(err.Error())
	}
}

// Key is one key of a keyed semaphore, as the backend that makes the
// key's semaphore sees it (see NewKeyed).
type Key struct {
	// Label is what observers, metrics and errors see of the key:
	// KeyLabel(key), at most MaxKeyLen bytes.
	Label string
	id    keyID
}

// public returns the Key of id, the kept id of key.
func (id keyID) public(key string) Key { return Key{Label: id.label(key), id: id} }

// Name returns the name of the key's semaphore in the keyed semaphore
// base: base + "#" + the key with every byte outside [A-Za-z0-9._/:-]
// written as '%' and two hex digits (as in a URL, '%' included) when that
// is 1 to 64 bytes, else base + "##" + 32 hex digits of the key's SHA-256.
// For example keyed "api" with key "tenant:vip" is "api#tenant:vip", and
// with key "GET /users/{id}" it is "api#GET%20/users/%7Bid%7D". Distinct
// keys get distinct names, and since a plain name cannot contain '#', no
// key can name another keyed semaphore's key or a plain semaphore. The
// name never holds '{', '}', '#' (but as the separator and the hash's
// mark) or white space.
func (k Key) Name(base string) string { return keyedName(base, k.id) }

// HashedName returns base + "##" + 32 hex digits of the key's SHA-256,
// whatever the key: for a backend whose names cannot hold every character
// that Name keeps verbatim. It never equals Name of another key.
func (k Key) HashedName(base string) string {
	if k.id.hashed {
		return base + string(names.Sep) + "#" + k.id.s[:32]
	}
	return base + string(names.Sep) + names.Hash(k.id.s)
}
