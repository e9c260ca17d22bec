package backend

import (
	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/bridge"
)

var newKeyed = bridge.NewKeyed.(func(string, int64, func(core.Key, int64) core.LimitSemaphore, func() error, []core.Option) *core.Keyed)

// NewKeyed returns a keyed semaphore named name over any backend: newSem
// makes the semaphore of a key on its first use (and again after the key
// was evicted), with the default limit or the key's override, named
// k.Name(name) or k.HashedName(name) in the backend's storage, so that no
// key reaches another key or a plain semaphore. closeAll closes the
// backend at Keyed.Close; if it is nil, Keyed closes each key's semaphore
// that has a Close method instead: in the background when the key is
// evicted (then it holds no permit and no waiter of this process), and at
// Keyed.Close, which also waits for those. Keyed.Adopt and ReleaseID reach
// a key's semaphore that has Adopt and ReleaseID methods of the Redis
// backend's shape. It panics as core.NewLocalKeyed does, on a nil newSem,
// and on a name that is empty or contains '{', '}', '#' or white space.
func NewKeyed(name string, defaultLimit int64, newSem func(k core.Key, limit int64) core.LimitSemaphore, closeAll func() error, opts ...core.Option) *core.Keyed {
	if newSem == nil {
		panic("backend: NewKeyed expects a non-nil newSem")
	}
	return newKeyed(name, defaultLimit, newSem, closeAll, opts)
}
