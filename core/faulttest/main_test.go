package faulttest

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/distsem/distsem/internal/servertest"
)

// childEnv names the mode of a child process started by re-running this
// test binary (see sigkill_test.go).
const childEnv = "DISTSEM_FAULTTEST_CHILD"

// TestMain doubles as the entry point of child processes, stops the shared
// redis-server after the tests, and checks that no goroutine leaked.
func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	servertest.QuietRedis() // a refused dial is the point of some scenarios
	// DISTSEM_FAULTTEST_PORTS is this suite's name for servertest's range.
	if r := os.Getenv("DISTSEM_FAULTTEST_PORTS"); r != "" && os.Getenv("DISTSEM_TEST_PORTS") == "" {
		os.Setenv("DISTSEM_TEST_PORTS", r)
	}
	code := m.Run()
	servertest.StopServers()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var figMu sync.Mutex

// figure logs what a scenario measured: key, value pairs; a time.Duration is
// written in milliseconds under key + "_ms". The figures come from a loaded
// machine: they are for the report, never for an assertion.
func figure(t testing.TB, scenario string, kv ...any) {
	t.Helper()
	m := map[string]any{"scenario": scenario}
	var words []string
	for i := 0; i+1 < len(kv); i += 2 {
		k, v := kv[i].(string), kv[i+1]
		if d, ok := v.(time.Duration); ok {
			k, v = k+"_ms", float64(d.Microseconds())/1000
		}
		m[k] = v
		words = append(words, fmt.Sprintf("%s=%v", k, v))
	}
	b, _ := json.Marshal(m)
	t.Logf("%s: %s", scenario, strings.Join(words, " "))
	t.Logf("FIGURE %s", b)
	if f := os.Getenv("DISTSEM_FAULT_FIGURES"); f != "" {
		figMu.Lock()
		defer figMu.Unlock()
		fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Errorf("figures file: %v", err)
			return
		}
		defer fh.Close()
		fmt.Fprintf(fh, "%s\n", b)
	}
}
