package redissem_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

func TestRedisBadInputPanics(t *testing.T) {
	c, _ := miniClient(t)
	// Each constructor's panic names its package: this package's for its
	// own checks, core's for the values of the options it forwards to core
	// (WithKeyPrefix, WithDefaultLeaseTTL) and for core's constructors.
	cases := map[string]struct {
		pkg string
		f   func()
	}{
		"nil client":     {"redissem: ", func() { redissem.New(nil, "x", 1) }},
		"empty name":     {"redissem: ", func() { redissem.New(c, "", 1) }},
		"brace in name":  {"redissem: ", func() { redissem.New(c, "a{b", 1) }},
		"close brace":    {"redissem: ", func() { redissem.New(c, "a}b", 1) }},
		"space in name":  {"redissem: ", func() { redissem.New(c, "a b", 1) }},
		"zero limit":     {"redissem: ", func() { redissem.New(c, "x", 0) }},
		"negative limit": {"redissem: ", func() { redissem.New(c, "x", -1) }},
		"brace prefix":   {"core: ", func() { redissem.New(c, "x", 1, redissem.WithKeyPrefix("p{")) }},
		"short lease":    {"core: ", func() { redissem.New(c, "x", 1, redissem.WithDefaultLeaseTTL(time.Millisecond)) }},
		"keyed limit":    {"redissem: ", func() { redissem.NewKeyed(c, "x", 0) }},
		"local limit":    {"core: ", func() { core.NewLocal(0) }},
		"fail local":     {"core: ", func() { core.FailLocal(0) }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				if msg := fmt.Sprint(r); !strings.HasPrefix(msg, tc.pkg) {
					t.Fatalf("panic %q does not name the package (want a %q message)", msg, tc.pkg)
				}
			}()
			tc.f()
		})
	}
}
