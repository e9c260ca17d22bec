package main

import (
	"strings"
	"testing"

	"github.com/distsem/distsem/examples/internal/clitest"
)

// mainEnv makes the test binary run main with these (space-separated)
// arguments, so that a test sees the real exit code and output.
const mainEnv = "DISTSEM_MAPREDUCE_MAIN"

func runCommand(t *testing.T, args string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.Run(t, mainEnv, args)
}

// The command line follows Go's conventions: -h exits 0, a usage error is
// one line and exit 2, a failure one line and exit 1, with no log lines
// of go-redis before it.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args, stderr string
		code         int
	}{
		{"-h", "", 0},
		{"-limit 0", "mapreduce: -limit 0: must be at least 1 (see mapreduce -h)\n", 2},
		{"-workers -1", "mapreduce: -workers -1: must be at least 1 (see mapreduce -h)\n", 2},
		{"-slow -1s", "mapreduce: -slow -1s: must not be negative (see mapreduce -h)\n", 2},
		{"-progress -1s", "mapreduce: -progress -1s: must not be negative (see mapreduce -h)\n", 2},
		{"-limit four", `mapreduce: invalid value "four" for flag -limit: parse error (see mapreduce -h)` + "\n", 2},
		{"-bogus", "mapreduce: flag provided but not defined: -bogus (see mapreduce -h)\n", 2},
		{"run", `mapreduce: unexpected argument "run" (see mapreduce -h)` + "\n", 2},
		{"-mode fast", `mapreduce: -mode "fast": want semaphore, setmaxopen or none (see mapreduce -h)` + "\n", 2},
		{"-driver mysql", `mapreduce: -driver "mysql": want sqlite or pgx (see mapreduce -h)` + "\n", 2},
		{"-driver pgx", "mapreduce: -driver pgx needs -dsn (see mapreduce -h)\n", 2},
		{"-chart out.gif", `mapreduce: -chart "out.gif": the file name must end in .svg or .png (see mapreduce -h)` + "\n", 2},
		{"-redis http://x", `mapreduce: -redis "http://x": redis: invalid URL scheme: http (see mapreduce -h)` + "\n", 2},
	} {
		code, stdout, stderr := runCommand(t, tc.args)
		if code != tc.code || stderr != tc.stderr {
			t.Errorf("mapreduce %s: exit %d, stderr %q; want exit %d, stderr %q", tc.args, code, stderr, tc.code, tc.stderr)
		}
		if tc.args == "-h" && !strings.HasPrefix(stdout, "Usage: mapreduce [flags]\n") {
			t.Errorf("mapreduce -h printed %q, want the usage", stdout)
		}
	}

	// Redis unreachable: one line, exit 1.
	addr := clitest.ClosedAddr(t)
	code, _, stderr := runCommand(t, "-rows 10 -page 10 -workers 1 -progress 0 -redis redis://"+addr)
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "mapreduce: ") || !strings.Contains(stderr, addr) {
		t.Errorf("with Redis unreachable: exit %d, stderr %q; want exit 1 and one line naming %s", code, stderr, addr)
	}
}
