// Package redisstore is the Redis Store of core/adaptive: the processes of
// one semaphore share each window's samples, the election of the process
// that computes it, and the controller's state in Redis, next to the
// semaphore's own keys.
//
//	sem := redissem.New(client, "reports-db", 8)
//	lim, err := adaptive.New(sem, redisstore.New(client, "reports-db"))
//
// Each process makes one round trip per window (one script, sync.lua):
// it adds its samples to the window's hash, once per (process, window)
// however often the script runs, and, in the same step, elects itself to
// compute the window before with HSETNX on that window's hash (SET NX
// semantics: the first process to sync after a window is complete
// computes it; there is no lease, and no leader to lose). The elected
// process then stores the state with a second script (save.lua), which
// never overwrites the state of a later window. Windows are numbered by
// Redis TIME, so no client clock decides which window a sample is in.
//
// Every key has the semaphore's hash tag, {name}, so that on Redis Cluster
// they sit in the semaphore's slot: prefix{name}:adaptive:<window length
// in ms>:w:<window> (expires after 8 windows) and prefix{name}:adaptive:
// <window length>:state (expires WithStateTTL after the last decision; the
// next decision then starts again, with the slow start).
package redisstore

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/adaptive"
)

var (
	//go:embed sync.lua
	luaSync    string
	scriptSync = redis.NewScript(luaSync)
	//go:embed save.lua
	luaSave    string
	scriptSave = redis.NewScript(luaSave)
)

// Client is what the Store needs of a go-redis client: *redis.Client,
// *redis.ClusterClient, *redis.Ring and redis.UniversalClient all are.
type Client interface{ redis.Scripter }

// Store is an adaptive.Store in Redis. It is safe for concurrent use.
type Store struct {
	client   Client
	base     string // prefix{name}:adaptive:
	stateTTL time.Duration
}

var _ adaptive.Store = (*Store)(nil)

// Option configures New.
type Option func(*Store)

// WithKeyPrefix sets the prefix of the keys, which must be the
// semaphore's (redissem.WithKeyPrefix). The default is "distsem:", the
// semaphore's default. It must not contain '{' or '}'.
func WithKeyPrefix(prefix string) Option { return func(s *Store) { s.base = prefix } }

// WithStateTTL sets how long the controller's state is kept after the
// last decision. The default is 1 hour. It must be at least 1s.
func WithStateTTL(d time.Duration) Option { return func(s *Store) { s.stateTTL = d } }

// New returns the Store of the semaphore named name (the name given to
// redissem.New, or to consul.New for a Consul semaphore whose processes
// share a Redis). It panics on a nil client, an empty name, a name or
// prefix with '{' or '}', or a state TTL below 1s.
func New(client Client, name string, opts ...Option) *Store {
	if client == nil {
		panic("redisstore: New expects a non-nil client")
	}
	s := &Store{client: client, base: "distsem:", stateTTL: time.Hour}
	for _, o := range opts {
		o(s)
	}
	switch {
	case name == "" || strings.ContainsAny(name, "{}") || strings.ContainsAny(s.base, "{}"):
		panic(fmt.Sprintf("redisstore: bad name %q or key prefix %q", name, s.base))
	case s.stateTTL < time.Second:
		panic(fmt.Sprintf("redisstore: WithStateTTL expects at least 1s, got %v", s.stateTTL))
	}
	s.base += "{" + name + "}:adaptive:"
	return s
}

func (s *Store) keys(length time.Duration, n int64) []string {
	b := s.base + strconv.FormatInt(length.Milliseconds(), 10) + ":"
	return []string{b + "w:" + strconv.FormatInt(n, 10), b + "w:" + strconv.FormatInt(n-1, 10), b + "state"}
}

// Sync implements adaptive.Store. A req.Window of 0, or one that is not
// among the last three in Redis time, costs a second round trip: the
// window is then the one before the current.
func (s *Store) Sync(ctx context.Context, req adaptive.SyncRequest) (adaptive.SyncReply, error) {
	if err := adaptive.CheckSamples(req.Samples); err != nil {
		return adaptive.SyncReply{}, err
	}
	if req.Length < time.Millisecond || req.Process == "" {
		return adaptive.SyncReply{}, fmt.Errorf("%w: redisstore: window length %v (at least 1ms), process %q",
			core.ErrInvalidArgument, req.Length, req.Process)
	}
	n := req.Window
	for try := 0; ; try++ {
		r, now, err := s.sync(ctx, req, n)
		if err != nil || r != nil {
			return deref(r), err
		}
		if try > 0 {
			return adaptive.SyncReply{}, fmt.Errorf("%w: redisstore: window %d refused twice", core.ErrUnavailable, n)
		}
		n = now.UnixMicro()/req.Length.Microseconds() - 1
	}
}

func deref(r *adaptive.SyncReply) adaptive.SyncReply {
	if r == nil {
		return adaptive.SyncReply{}
	}
	return *r
}

// sync runs the script once; a nil reply means the window was refused.
func (s *Store) sync(ctx context.Context, req adaptive.SyncRequest, n int64) (*adaptive.SyncReply, time.Time, error) {
	w := req.Samples
	ttl := 8 * req.Length.Milliseconds()
	v, err := scriptSync.Run(ctx, s.client, s.keys(req.Length, n), n, req.Length.Microseconds(), req.Process,
		w.Samples, w.Latency.Microseconds(), w.Failed, w.TimedOut, ttl).Slice()
	if err != nil {
		return nil, time.Time{}, unavailable("sync", err)
	}
	now := time.Unix(num(v, 1), num(v, 2)*1000)
	if num(v, 0) == 0 {
		return nil, now, nil
	}
	r := &adaptive.SyncReply{Now: now, Window: n, Elected: num(v, 3) == 1}
	if r.Elected {
		r.Aggregate = adaptive.Window{Samples: num(v, 4), Latency: time.Duration(num(v, 5)) * time.Microsecond,
			Failed: num(v, 6), TimedOut: num(v, 7)}
	}
	if st, ok := v[8].(string); ok {
		if err := json.Unmarshal([]byte(st), &r.State); err != nil {
			return nil, now, fmt.Errorf("%w: redisstore: stored state: %w", core.ErrUnavailable, err)
		}
		r.HasState = true
	}
	return r, now, nil
}

// num reads v[i] as an integer: nil (a field not set) is 0.
func num(v []any, i int) int64 {
	switch x := v[i].(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// Save implements adaptive.Store.
func (s *Store) Save(ctx context.Context, length time.Duration, st adaptive.State) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("%w: redisstore: %w", core.ErrInvalidArgument, err)
	}
	k := s.keys(length, 0)[2:]
	if err := scriptSave.Run(ctx, s.client, k, st.Window, b, s.stateTTL.Milliseconds()).Err(); err != nil {
		return unavailable("save", err)
	}
	return nil
}

// unavailable wraps a failed round trip; ctx's end stays visible to
// errors.Is.
func unavailable(op string, err error) error {
	return fmt.Errorf("%w: redisstore: %s: %w", core.ErrUnavailable, op, err)
}
