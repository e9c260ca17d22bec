package consul_test

import (
	"testing"

	"github.com/distsem/distsem/core/semtest"
)

// TestConformance runs core's conformance suite (core/semtest),
// unchanged, on the real agent.
func TestConformance(t *testing.T) {
	semtest.Run(t, semtest.Backend{Name: "consul", New: func(t *testing.T, limit int64) semtest.Sem {
		return newSem(t, limit)
	}})
}
