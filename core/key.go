package core

import (
	"github.com/distsem/distsem/core/internal/names"
)

// MaxKeyLen is the longest key, in bytes, that a keyed semaphore keeps as
// it is. A longer key (they come from requests: paths, tenant ids) is
// identified by its SHA-256 instead, so that memory stays bounded in bytes
// whatever the keys: in this process, in Redis, and in the labels that
// observers see (see Keyed). Two distinct keys always get distinct
// semaphores, short or long (up to a SHA-256 collision).
const MaxKeyLen = names.MaxKeyLen

// KeyLabel returns the name that observers see (Event.Name) for the key
// of a keyed semaphore: key itself when it is at most MaxKeyLen bytes, else
// its first 64 bytes, "…#" and 16 hex digits of its SHA-256. A collector
// that gives named keys series of their own matches events against it.
func KeyLabel(key string) string { return names.NewKeyID(key).Label(key) }

// checkName panics unless name is a valid plain semaphore name: not
// empty, and without '{', '}', '#' or white space.
func checkName(name string) {
	if err := names.CheckName(name); err != nil {
		panic(err.Error())
	}
}

// Key is one key of a keyed semaphore, as the backend that makes the
// key's semaphore sees it (see core/backend.NewKeyed).
type Key struct {
	// Label is what observers, metrics and errors see of the key:
	// KeyLabel(key), at most MaxKeyLen bytes.
	Label string
	id    names.KeyID
}

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
func (k Key) Name(base string) string { return k.id.Name(base) }

// HashedName returns base + "##" + 32 hex digits of the key's SHA-256,
// whatever the key: for a backend whose names cannot hold every character
// that Name keeps verbatim. It never equals Name of another key.
func (k Key) HashedName(base string) string { return k.id.HashedName(base) }
