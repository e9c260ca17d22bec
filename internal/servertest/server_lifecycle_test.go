package servertest_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// childEnv makes the test binary act as a process that starts the shared
// servers, prints their addresses, and then exits in the way the value
// names ("exit" or "hang", to be killed by the parent).
const childEnv = "DISTSEM_SERVERTEST_CHILD"

func TestMain(m *testing.M) {
	if how := os.Getenv(childEnv); how != "" {
		os.Exit(child(how))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		servertest.StopServers()
		os.Exit(code)
	}))
}

// child runs the shared-server lookups outside of go test's control, as a
// test binary does, and reports what it got on stdout.
func child(how string) int {
	var t fakeTB
	fmt.Println("redis", servertest.RedisAddr(&t))
	if strings.Contains(how, "pg") {
		fmt.Println("postgres", servertest.PostgresDSN(&t))
	}
	fmt.Println("ready")
	if strings.HasPrefix(how, "hang") {
		select {} // until the parent kills us
	}
	return 0
}

// fakeTB lets child call the lookups outside a test; any failure ends the
// process.
type fakeTB struct{ testing.TB }

func (*fakeTB) Helper()                   {}
func (*fakeTB) Fatalf(f string, a ...any) { fmt.Println("FATAL", fmt.Sprintf(f, a...)); os.Exit(3) }
func (*fakeTB) Skipf(f string, a ...any)  { fmt.Println("SKIP", fmt.Sprintf(f, a...)); os.Exit(4) }

func TestStartRedisKillRestart(t *testing.T) {
	s := servertest.StartRedis(t, "--maxmemory", "10mb")
	addr := s.Addr()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	ctx := t.Context()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := c.ConfigGet(ctx, "maxmemory").Val()["maxmemory"]; got != "10485760" {
		t.Fatalf("extra argument not applied: maxmemory %q", got)
	}

	s.Kill()
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Fatal("the killed server still accepts connections")
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded against a killed server")
	}
	s.Kill() // killing a dead server does nothing

	s.Restart()
	if s.Addr() != addr {
		t.Fatalf("restart moved the server from %s to %s", addr, s.Addr())
	}
	if err := c.Get(ctx, "k").Err(); err != redis.Nil {
		t.Fatalf("data survived the restart: GET k = %v", err)
	}
	s.Restart() // restarting a running server works too
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	s.Stop()
	if _, err := os.Stat(s.Dir()); !os.IsNotExist(err) {
		t.Fatalf("Stop left the directory %s: %v", s.Dir(), err)
	}
}

// DISTSEM_TEST_PORTS keeps the servers servertest starts in its range.
func TestStartRedisPortRange(t *testing.T) {
	t.Setenv("DISTSEM_TEST_PORTS", "27400-27409")
	for range 2 {
		s := servertest.StartRedis(t)
		_, p, _ := net.SplitHostPort(s.Addr())
		if port, err := strconv.Atoi(p); err != nil || port < 27400 || port > 27409 {
			t.Fatalf("server on %s, want a port in 27400-27409", s.Addr())
		}
	}
}

// The shared servers die with the test binary (the child here), whether it
// exits normally or is killed.
func TestSharedServersDieWithProcess(t *testing.T) {
	for _, how := range []string{"exit", "hang"} {
		t.Run(how, func(t *testing.T) {
			mode := how
			if how == "exit" {
				mode += "+pg" // PostgreSQL takes a second or two; check it once
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(withoutServers(), childEnv+"="+mode)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			sc := bufio.NewScanner(out)
			for sc.Scan() && sc.Text() != "ready" {
				k, v, _ := strings.Cut(sc.Text(), " ")
				got[k] = v
			}
			if msg, ok := got["SKIP"]; ok {
				cmd.Wait()
				t.Skip(msg) // not installed, and CI is not set
			}
			if how == "hang" {
				cmd.Process.Signal(syscall.SIGKILL)
			}
			err = cmd.Wait()
			t.Logf("child: %v, %v", got, err)
			if got["redis"] == "" {
				t.Fatalf("child did not start Redis: %v", got)
			}
			waitRefused(t, got["redis"], nil)
			if dsn := got["postgres"]; dsn != "" {
				waitRefused(t, strings.TrimSuffix(strings.Split(dsn, "@")[1], "/postgres?sslmode=disable"), pgStartup())
			} else if strings.Contains(mode, "pg") {
				t.Fatalf("child did not start PostgreSQL: %v", got)
			}
		})
	}
}

// waitRefused waits until nothing listens on addr any more (servers may
// take a moment to exit after their parent died). It holds a connection
// open until the server closes it, which it does when it dies, then dials
// again: a refused dial ends the wait. hello, when not nil, is sent first
// (PostgreSQL: a startup message, since a connection that never sends one
// would itself delay the server's shutdown by authentication_timeout).
func waitRefused(t *testing.T, addr string, hello []byte) {
	t.Helper()
	const bound = 30 * time.Second
	deadline := time.Now().Add(bound)
	testwait.Until(t, bound, "a server still listens on "+addr+" after its test binary ended", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true
		}
		_ = c.SetDeadline(deadline)
		if hello != nil {
			_, _ = c.Write(hello)
		}
		_, _ = io.Copy(io.Discard, c) // until the server closes it
		c.Close()
		return false
	})
}

// pgStartup is a PostgreSQL protocol 3.0 startup message for user and
// database postgres (trust authentication).
func pgStartup() []byte {
	body := append(binary.BigEndian.AppendUint32(nil, 3<<16), "user\x00postgres\x00database\x00postgres\x00\x00"...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(4+len(body))), body...)
}

func withoutServers() []string {
	var env []string
	for _, kv := range os.Environ() {
		// The port range stays: the child's servers keep to it too.
		if !strings.HasPrefix(kv, "DISTSEM_") || strings.HasPrefix(kv, "DISTSEM_TEST_PORTS=") {
			env = append(env, kv)
		}
	}
	return env
}

// With no address given and no redis-server on PATH, a test skips, and
// fails when CI is set.
func TestMissingServerSkipsOrFails(t *testing.T) {
	for _, ci := range []string{"", "1"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		var env []string
		for _, kv := range withoutServers() {
			if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "CI=") {
				env = append(env, kv)
			}
		}
		cmd.Env = append(env, "PATH="+t.TempDir(), "CI="+ci, childEnv+"=exit")
		out, _ := cmd.Output()
		want := map[string]string{"": "SKIP", "1": "FATAL"}[ci]
		if !strings.HasPrefix(string(out), want+" ") || !strings.Contains(string(out), "redis-server not installed") {
			t.Errorf("CI=%q: got %q, want a line starting %q naming redis-server", ci, out, want)
		}
	}
}
