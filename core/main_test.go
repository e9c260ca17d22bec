package core_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/semtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestConformance runs the conformance suite on the in-process semaphore,
// plain, keyed, and behind the reentrant wrapper.
func TestConformance(t *testing.T) {
	for _, b := range []semtest.Backend{
		{Name: "local", New: func(t *testing.T, limit int64) semtest.Sem {
			s := core.NewLocal(limit)
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
		{Name: "local-keyed", New: func(t *testing.T, limit int64) semtest.Sem {
			k := core.NewLocalKeyed(limit)
			t.Cleanup(func() { _ = k.Close() })
			return semtest.OneKey(k, "GET /reports")
		}},
	} {
		t.Run(b.Name, func(t *testing.T) { semtest.Run(t, b) })
	}
}
