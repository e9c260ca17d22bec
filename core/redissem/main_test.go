package redissem_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/distsem/distsem/internal/servertest"
)

// TestMain doubles as the entry point of the child processes that the
// multi-process tests start by running this test binary again.
func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	servertest.QuietRedis() // outages are the point of some tests
	goleak.VerifyTestMain(m, goleak.Cleanup(servertest.Exit))
}
