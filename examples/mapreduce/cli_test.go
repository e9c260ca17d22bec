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
	clitest.Check(t, mainEnv, "mapreduce", []clitest.Case{
		{Args: "-h", Stderr: "", Code: 0},
		{Args: "-limit 0", Stderr: "mapreduce: -limit 0: must be at least 1 (see mapreduce -h)\n", Code: 2},
		{Args: "-workers -1", Stderr: "mapreduce: -workers -1: must be at least 1 (see mapreduce -h)\n", Code: 2},
		{Args: "-slow -1s", Stderr: "mapreduce: -slow -1s: must not be negative (see mapreduce -h)\n", Code: 2},
		{Args: "-skew 1", Stderr: "mapreduce: -skew 1: want a share from 0 to below 1 (see mapreduce -h)\n", Code: 2},
		{Args: "-skew NaN", Stderr: "mapreduce: -skew NaN: want a share from 0 to below 1 (see mapreduce -h)\n", Code: 2},
		{Args: "-progress -1s", Stderr: "mapreduce: -progress -1s: must not be negative (see mapreduce -h)\n", Code: 2},
		{Args: "-limit four", Stderr: `mapreduce: invalid value "four" for flag -limit: parse error (see mapreduce -h)` + "\n", Code: 2},
		{Args: "-bogus", Stderr: "mapreduce: flag provided but not defined: -bogus (see mapreduce -h)\n", Code: 2},
		{Args: "run", Stderr: `mapreduce: unexpected argument "run" (see mapreduce -h)` + "\n", Code: 2},
		{Args: "-mode pipe -limit 4097", Stderr: `mapreduce: -mode pipe holds at most 4096 tokens, not -limit 4097 (see mapreduce -h)` + "\n", Code: 2},
		{Args: "-mode fast", Stderr: `mapreduce: -mode "fast": want semaphore, setmaxopen, pipe, list or none (see mapreduce -h)` + "\n", Code: 2},
		{Args: "-driver mysql", Stderr: `mapreduce: -driver "mysql": want sqlite or pgx (see mapreduce -h)` + "\n", Code: 2},
		{Args: "-driver pgx", Stderr: "mapreduce: -driver pgx needs -dsn (see mapreduce -h)\n", Code: 2},
		{Args: "-chart out.gif", Stderr: `mapreduce: -chart "out.gif": the file name must end in .svg or .png (see mapreduce -h)` + "\n", Code: 2},
		{Args: "-redis http://x", Stderr: `mapreduce: -redis "http://x": redis: invalid URL scheme: http (see mapreduce -h)` + "\n", Code: 2},
	})

	// Redis unreachable: one line, exit 1.
	addr := clitest.RefusedAddr(t)
	code, _, stderr := runCommand(t, "-rows 10 -page 10 -workers 1 -progress 0 -redis redis://"+addr)
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "mapreduce: ") || !strings.Contains(stderr, addr) {
		t.Errorf("with Redis unreachable: exit %d, stderr %q; want exit 1 and one line naming %s", code, stderr, addr)
	}
}
