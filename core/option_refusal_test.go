package core_test

import (
	"strings"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

// A constructor refuses, by name, every option it cannot honour, instead of
// ignoring it.
func TestConstructorsRefuseOptionsTheyCannotHonour(t *testing.T) {
	newSem := func(core.Key, int64) core.LimitSemaphore { return core.NewLocal(1) }
	for _, tc := range []struct {
		name, want string
		build      func()
	}{
		{"NewLocal WithKeyPrefix", "NewLocal does not take WithKeyPrefix", func() { core.NewLocal(1, core.WithKeyPrefix("x:")) }},
		{"NewLocal WithDefaultLeaseTTL", "NewLocal does not take WithDefaultLeaseTTL", func() { core.NewLocal(1, core.WithDefaultLeaseTTL(time.Second)) }},
		{"NewLocal WithLimits", "NewLocal does not take WithLimits", func() { core.NewLocal(1, core.WithLimits(map[string]int64{"a": 1})) }},
		{"NewLocal WithFailurePolicy", "NewLocal does not take WithFailurePolicy", func() { core.NewLocal(1, core.WithFailurePolicy(core.FailOpen)) }},
		{"NewLocal WithOnError", "NewLocal does not take WithOnError", func() { core.NewLocal(1, core.WithOnError(func(error) {})) }},
		{"NewLocalKeyed WithName", "NewLocalKeyed does not take WithName", func() { core.NewLocalKeyed(1, core.WithName("n")) }},
		{"NewShare WithMaxIdleKeys", "NewShare does not take WithMaxIdleKeys", func() { backend.NewShare("s", 1, core.WithMaxIdleKeys(2)) }},
		{"ResolveOptions WithName", "ResolveOptions does not take WithName", func() { backend.ResolveOptions(core.WithName("n")) }},
		{"NewKeyed WithName", "NewKeyed does not take WithName", func() { backend.NewKeyed("k", 1, newSem, nil, core.WithName("n")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "core: ") || !strings.Contains(msg, tc.want) {
					t.Fatalf("panic %q, want one naming %q", msg, tc.want)
				}
			}()
			tc.build()
		})
	}
	// What they take, they take.
	core.NewLocal(1, core.WithObserver(core.ObserverFunc(func(core.Event) {})), core.WithName("db"))
	core.NewLocalKeyed(1, core.WithLimits(map[string]int64{"a": 2}), core.WithMaxIdleKeys(1)).Close()
	if cfg := backend.ResolveOptions(core.WithKeyPrefix("p:"), core.WithLimits(nil)); cfg.KeyPrefix != "p:" || !cfg.Keyed {
		t.Fatalf("ResolveOptions = %+v, want prefix p: and Keyed", cfg)
	}
}
