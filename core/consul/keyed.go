package consul

import (
	"fmt"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

// NewKeyed returns one Consul semaphore per key, each created on first use
// with defaultLimit permits unless core.WithLimits or Keyed.SetLimit says
// otherwise. Keys may come from untrusted input: see core.Keyed for the
// memory bound. It takes New's options and core.WithLimits and
// core.WithMaxIdleKeys, and panics as New does.
//
// The semaphore of key is named core.Key.Name(name) in Consul (name + "#"
// + the key, with every byte outside [A-Za-z0-9._/:-] escaped as %XX) when
// that is 1 to 64 bytes and holds no '/', and name + "##" + 32 hex digits
// of the key's SHA-256 otherwise, so no key reaches another key's
// semaphore or a plain one (New's names cannot contain '#'). Each key's semaphore has its
// own session, created by its first Acquire; an idle key's semaphore is
// closed (its session destroyed) when the key is evicted, and every key's
// at Keyed.Close.
func NewKeyed(client *api.Client, name string, defaultLimit int64, opts ...core.Option) *core.Keyed {
	if client == nil {
		panic("consul: NewKeyed expects a non-nil client")
	}
	if strings.Contains(name, "/") {
		panic(fmt.Sprintf("consul: semaphore name %q must not contain '/'", name))
	}
	cfg := backend.ResolveOptions(opts...)
	return backend.NewKeyed(name, defaultLimit, func(k core.Key, limit int64) core.LimitSemaphore {
		n := k.Name(name)
		if strings.Contains(n[len(name):], "/") { // a Consul key path would nest under another
			n = k.HashedName(name)
		}
		return newSemaphore(client, n, k.Label, limit, cfg)
	}, nil, opts...)
}
