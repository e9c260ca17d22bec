package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// The tests run distsem as a real process: this test binary, started
// again with asDistsem set, is distsem; started with the first argument
// "child", it is a command for distsem to run (see runChild).
const asDistsem = "DISTSEM_TEST_AS_DISTSEM"

func TestMain(m *testing.M) {
	if os.Getenv(asDistsem) != "" {
		if len(os.Args) > 1 && os.Args[1] == "child" {
			os.Exit(runChild(os.Args[2:]))
		}
		main()
	}
	code := m.Run()
	servertest.StopServers()
	os.Exit(code)
}

// runChild is a command run by distsem in the tests:
//
//	hold FILE: appends "pid N token T" to FILE, then runs until
//	SIGKILL, appending "term" for each SIGTERM it ignores.
func runChild(args []string) int {
	f, err := os.OpenFile(args[1], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch args[0] {
	case "hold":
		terms := make(chan os.Signal, 1)
		signal.Notify(terms, syscall.SIGTERM)
		fmt.Fprintf(f, "pid %d token %s\n", os.Getpid(), os.Getenv("DISTSEM_TOKEN"))
		for range terms {
			f.WriteString("term\n")
		}
	}
	return 2
}

// redisURL returns the URL of the test Redis.
func redisURL(t *testing.T) string {
	return "redis://" + servertest.RedisAddr(t)
}

var seq atomic.Int64

// uniqueName returns a semaphore name and a key prefix that no other test
// uses.
func uniqueName() (name, prefix string) {
	n := seq.Add(1)
	return fmt.Sprintf("sem%d", n), fmt.Sprintf("clitest%d-%d:", time.Now().UnixNano(), n)
}

// distsem returns the command that runs distsem with args, its stdout and
// stderr collected.
func distsem(t *testing.T, args ...string) (cmd *exec.Cmd, stdout, stderr *bytes.Buffer) {
	t.Helper()
	cmd = exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asDistsem+"=1")
	stdout, stderr = new(bytes.Buffer), new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A command that outlives distsem holds the pipes open: Wait fails then.
	cmd.WaitDelay = 10 * time.Second
	return cmd, stdout, stderr
}

// child returns the arguments that make distsem run runChild's mode.
func child(mode, file string) []string {
	return []string{"--", os.Args[0], "child", mode, file}
}

// exitCode runs cmd (if not started) and returns its exit status.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	var err error
	if cmd.Process == nil {
		err = cmd.Run()
	} else {
		err = cmd.Wait()
	}
	if err != nil && cmd.ProcessState == nil || err == exec.ErrWaitDelay {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return cmd.ProcessState.ExitCode()
}

// testSem returns a client of the test Redis and the semaphore name with
// prefix, as distsem sees it.
func testSem(t *testing.T, name, prefix string, limit int64) (*redissem.Semaphore, *redis.Client) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(t)})
	s := redissem.New(c, name, limit, redissem.WithKeyPrefix(prefix))
	t.Cleanup(func() { s.Close(); c.Close() })
	return s, c
}

// hold acquires a permit of s, released at the end of the test.
func hold(t *testing.T, s *redissem.Semaphore, opts ...core.AcquireOption) *core.Permit {
	t.Helper()
	p, err := s.Acquire(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Release(context.Background()) })
	return p
}

// inUse returns the permits held on s.
func inUse(t *testing.T, s *redissem.Semaphore) int64 {
	t.Helper()
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.InUse
}

// readFile returns the lines of path; none if it does not exist.
func readFile(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' })
}

func tempFile(t *testing.T, name string) string { return filepath.Join(t.TempDir(), name) }

// execCmd is a started distsem and its stderr.
type execCmd struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
}
