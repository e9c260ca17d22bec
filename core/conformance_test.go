package core_test

import (
	"testing"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/semtest"
)

// TestConformance runs the conformance suite on the in-process semaphore,
// plain and keyed (the suite checks the reentrant wrapper over each).
func TestConformance(t *testing.T) {
	for _, b := range []semtest.Backend{
		{Name: "local", New: func(t *testing.T, limit int64) semtest.Sem {
			s := core.NewLocal(limit)
			t.Cleanup(func() { _ = s.Close() })
			return s
		}, Flows: true},
		{Name: "local-keyed", New: func(t *testing.T, limit int64) semtest.Sem {
			k := core.NewLocalKeyed(limit)
			t.Cleanup(func() { _ = k.Close() })
			return semtest.OneKey(k, "GET /reports")
		}, Flows: true},
	} {
		t.Run(b.Name, func(t *testing.T) { semtest.Run(t, b) })
	}
}
