package sqlmw_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/distsem/distsem/internal/servertest"
)

// TestMain runs the test binary as a PostgreSQL worker (see
// TestPostgresLimit) when pgWorkerEnv is set, and otherwise runs the tests
// and checks that they leaked no goroutine.
func TestMain(m *testing.M) {
	if cfg := os.Getenv(pgWorkerEnv); cfg != "" {
		if err := pgWorker(cfg); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if code == 0 {
		// Every DB, Rows and Tx the tests opened must be closed by now.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	servertest.Exit(code)
}
