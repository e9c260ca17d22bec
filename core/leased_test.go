package core_test

import (
	"context"
	"testing"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/coretest/semtest"
)

// leasedBackends are the Redis backends of the suite in the leased-shares
// mode: one process, so its behaviour must match the default mode's.
func leasedBackends() []backend {
	return []backend{
		{"miniredis", func(t *testing.T, limit int64, opts ...core.Option) sem {
			c, _ := miniClient(t)
			return closeAtCleanup(t, core.NewRedis(c, "conf", limit, append(opts, core.WithLeasedShares())...))
		}},
		{"redis", func(t *testing.T, limit int64, opts ...core.Option) sem {
			return realSem(t, realClient(t), limit, append(opts, core.WithLeasedShares()))
		}},
	}
}

// TestLeasedConformance runs the conformance suite on the leased mode.
func TestLeasedConformance(t *testing.T) {
	for _, b := range leasedBackends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			semtest.Run(t, semtest.Backend{Name: b.name, New: func(t *testing.T, limit int64, opts ...core.Option) semtest.Sem {
				return b.new(t, limit, opts...)
			}})
		})
	}
}

var _ = context.Background
