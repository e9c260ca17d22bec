package redissem

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"
)

// A dialWatch records the outcome of a client's most recent dial, so that a
// round trip that the operation timeout ended can name why: go-redis dials
// a new connection in the background, retries a refused dial with a backoff
// that outlasts the operation timeout, and then answers the caller with its
// ctx's error, so without the watch an unreachable server surfaces as
// "context deadline exceeded".
type dialWatch struct {
	last atomic.Pointer[dialOutcome]
}

type dialOutcome struct {
	err error // nil: the dial succeeded
	at  time.Time
}

// dialRecent is how long before a round trip a failed dial still explains
// it: while every dial fails, go-redis stops dialling for callers and
// probes once a second instead.
const dialRecent = 2 * time.Second

// watches holds one dialWatch per client, so that many semaphores on one
// client add one hook, not one each. The key does not keep the client
// alive; the entry goes with it.
var watches sync.Map // weak.Pointer[redis.Client or redis.ClusterClient] -> *dialWatch

// watchDials returns client's dialWatch, adding its hook the first time.
// A *redis.Client (also a Sentinel failover client) is watched at once; a
// *redis.ClusterClient for the node clients it creates from now on. Other
// clients are not watched (nil, whose methods are no-ops).
func watchDials(client redis.UniversalClient) *dialWatch {
	switch c := client.(type) {
	case *redis.Client:
		return watchOnce(c, func(w *dialWatch) { c.AddHook(w) })
	case *redis.ClusterClient:
		return watchOnce(c, func(w *dialWatch) { c.OnNewNode(func(n *redis.Client) { n.AddHook(w) }) })
	}
	return nil
}

func watchOnce[T any](c *T, install func(*dialWatch)) *dialWatch {
	key := weak.Make(c)
	if w, ok := watches.Load(key); ok {
		return w.(*dialWatch)
	}
	w := new(dialWatch)
	if prev, loaded := watches.LoadOrStore(key, w); loaded {
		return prev.(*dialWatch)
	}
	install(w)
	runtime.AddCleanup(c, func(k weak.Pointer[T]) { watches.Delete(k) }, key)
	return w
}

// DialHook records each dial's outcome; the dial itself is unchanged.
func (w *dialWatch) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		w.last.Store(&dialOutcome{err: err, at: time.Now()})
		return conn, err
	}
}

// ProcessHook leaves commands unchanged.
func (w *dialWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook leaves pipelines unchanged.
func (w *dialWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// explain returns err, the end of a round trip started at since under
// parent, or, when the operation timeout ended it (a deadline that is not
// parent's) while the client's latest dial had failed, no earlier than
// dialRecent before since, an error that wraps that dial error (a
// *net.OpError) instead. That error no longer matches
// context.DeadlineExceeded: the caller's own deadline did not pass.
func (w *dialWatch) explain(parent context.Context, since time.Time, err error) error {
	if w == nil || err == nil || parent.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if o := w.last.Load(); o != nil && o.err != nil && o.at.After(since.Add(-dialRecent)) {
		return fmt.Errorf("no connection within the operation timeout: %w", o.err)
	}
	return err
}
