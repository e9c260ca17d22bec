// Package clitest runs an example's main as a user would, for the examples'
// command-line tests: the test binary re-runs itself with an environment
// variable that makes its TestMain call main with the given arguments.
package clitest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runLimit bounds one run: a command that should have exited but serves
// instead fails the test rather than hanging it.
const runLimit = 2 * time.Minute

// Run runs the test binary again with env=args (space-separated arguments
// that the example's TestMain hands to main), and returns its exit code,
// stdout and stderr. A run still going after runLimit is killed and fails
// the test.
func Run(t *testing.T, env, args string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+args)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if ctx.Err() != nil {
		t.Fatalf("%s=%q still running after %v: killed (stderr %q)", env, args, runLimit, errb.String())
	}
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// RefusedAddr returns a loopback address that refuses connections, for a
// test that only dials it: port 1, below the ephemeral range, so that no
// listener on port 0 of a test running beside it can take it (as it can
// take a port that ClosedAddr returned). It fails the test if something
// listens there.
func RefusedAddr(t *testing.T) string {
	t.Helper()
	const addr = "127.0.0.1:1"
	if c, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		c.Close()
		t.Fatalf("something listens on %s: the test needs an address that refuses connections", addr)
	}
	return addr
}

// ClosedAddr returns a loopback address where nothing listens now, free
// to listen on. Another test's listener on port 0 may take it meanwhile:
// a test that only dials it uses RefusedAddr.
func ClosedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// Case is one command line and what the command must answer: its exit code
// and its whole stderr.
type Case struct {
	Args, Stderr string
	Code         int
}

// Check runs every case through Run (see there for env) and reports each
// exit code or stderr that differs; for "-h" it also wants stdout to start
// with "Usage: name [flags]".
func Check(t *testing.T, env, name string, cases []Case) {
	t.Helper()
	for _, tc := range cases {
		code, stdout, stderr := Run(t, env, tc.Args)
		if code != tc.Code || stderr != tc.Stderr {
			t.Errorf("%s %s: exit %d, stderr %q; want exit %d, stderr %q", name, tc.Args, code, stderr, tc.Code, tc.Stderr)
		}
		if tc.Args == "-h" && !strings.HasPrefix(stdout, "Usage: "+name+" [flags]\n") {
			t.Errorf("%s -h printed %q, want the usage", name, stdout)
		}
	}
}
