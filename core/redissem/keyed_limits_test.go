package redissem_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

// keyedBackends makes each keyed backend for the subtest t it is given, so
// that a skip (no server) skips only that subtest.
func keyedBackends() map[string]func(t *testing.T, def int64, opts ...opt) *core.Keyed {
	return map[string]func(*testing.T, int64, ...opt) *core.Keyed{
		"local": func(_ *testing.T, def int64, opts ...opt) *core.Keyed {
			return core.NewLocalKeyed(def, localOpts(opts)...)
		},
		"miniredis": func(t *testing.T, def int64, opts ...opt) *core.Keyed {
			c, _ := miniClient(t)
			return redissem.NewKeyed(c, "routes", def, redisOpts(opts)...)
		},
		"redis": func(t *testing.T, def int64, opts ...opt) *core.Keyed {
			ropts := append([]redissem.Option{redissem.WithKeyPrefix(uniquePrefix(t))}, redisOpts(opts)...)
			return redissem.NewKeyed(realClient(t), "routes", def, ropts...)
		},
	}
}

func TestKeyedLimitsAndEviction(t *testing.T) {
	for name, newKeyed := range keyedBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			k := newKeyed(t, 2, optLimits(map[string]int64{"/slow": 1}), optMaxIdleKeys(8))
			defer k.Close()
			p, err := k.Acquire(ctx, "/slow")
			ok(t, err)
			if _, err := k.TryAcquire(ctx, "/slow"); !errors.Is(err, core.ErrNoPermit) {
				t.Fatalf("override of 1 admitted a second holder: %v", err)
			}
			// Hostile keys: many distinct ones, with braces and spaces.
			for i := range 200 {
				key := fmt.Sprintf("/x{%d} %s", i, strings.Repeat("a", i))
				q, err := k.TryAcquire(ctx, key)
				ok(t, err)
				ok(t, q.Release(ctx))
			}
			if n := k.Len(); n > 8+1 {
				t.Fatalf("%d keys kept, want at most 8 idle + 1 busy", n)
			}
			// The busy key survived eviction and still holds its permit.
			if st, err := k.Stats(ctx, "/slow"); err != nil || st.InUse != 1 || st.Limit != 1 {
				t.Fatalf("/slow stats = %+v, %v", st, err)
			}
			ok(t, p.Release(ctx))
			ok(t, k.SetLimit(ctx, "/fast", 5))
			if st, _ := k.Stats(ctx, "/fast"); st.Limit != 5 {
				t.Fatalf("/fast limit = %d, want 5", st.Limit)
			}
			ok(t, k.Close())
			if _, err := k.Acquire(ctx, "/fast"); !errors.Is(err, core.ErrClosed) {
				t.Fatalf("Acquire after Close: %v", err)
			}
		})
	}
}

// A nil AcquireOption is refused with ErrInvalidArgument by every keyed
// backend, reentrant or not, nested or not (the reentrancy check used to
// call it and panic).
func TestKeyedNilAcquireOption(t *testing.T) {
	for name, newKeyed := range keyedBackends() {
		t.Run(name, func(t *testing.T) {
			bg := context.Background()
			for _, reentrant := range []bool{false, true} {
				k := newKeyed(t, 2)
				var ks core.KeyedSemaphore = k
				if reentrant {
					ks = core.ReentrantKeyed(k)
				}
				p, err := ks.Acquire(bg, "a")
				ok(t, err)
				for ctxName, ctx := range map[string]context.Context{"bg": bg, "holder": core.ContextWithPermit(bg, p)} {
					for _, acq := range []func(context.Context, string, ...core.AcquireOption) (*core.Permit, error){ks.Acquire, ks.TryAcquire} {
						if q, err := acq(ctx, "a", core.WithWeight(1), nil); !errors.Is(err, core.ErrInvalidArgument) {
							t.Fatalf("nil AcquireOption (reentrant %v, %s ctx): %v, %v; want ErrInvalidArgument", reentrant, ctxName, q, err)
						}
					}
				}
				ok(t, p.Release(bg))
				if st, err := k.Stats(bg, "a"); err != nil || st.InUse != 0 {
					t.Fatalf("after the refusals: %+v, %v; want nothing in use", st, err)
				}
				ok(t, k.Close())
			}
		})
	}
}
