// Package clitest runs an example's main as a user would, for the examples'
// command-line tests: the test binary re-runs itself with an environment
// variable that makes its TestMain call main with the given arguments.
package clitest

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"testing"
)

// Run runs the test binary again with env=args (space-separated arguments
// that the example's TestMain hands to main), and returns its exit code,
// stdout and stderr.
func Run(t *testing.T, env, args string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+args)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// ClosedAddr returns a loopback address where nothing listens.
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
