package faulttest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is a redis-server process on a loopback port, with no persistence:
// a restart brings it back empty.
type server struct {
	port int
	dir  string
	cmd  *exec.Cmd
}

// redisServerPath returns the redis-server on PATH; without one the test is
// skipped, or fails when CI is set (CI must never pass by skipping).
func redisServerPath(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("redis-server not on PATH: the fault suite needs it under CI (%v)", err)
		}
		tb.Skipf("redis-server not on PATH: %v", err)
	}
	return p
}

// newServer starts a redis-server of its own for tb, killed when tb ends.
func newServer(tb testing.TB) *server {
	tb.Helper()
	bin := redisServerPath(tb)
	s := &server{dir: tb.TempDir()}
	if err := s.start(bin); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.kill)
	return s
}

var (
	sharedMu  sync.Mutex
	sharedSrv *server
)

// sharedServer returns one redis-server for the scenarios that do not stop
// or stall it; each scenario uses its own key prefix. TestMain stops it.
func sharedServer(tb testing.TB) *server {
	tb.Helper()
	bin := redisServerPath(tb)
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedSrv == nil {
		dir, err := os.MkdirTemp("", "distsem-faulttest-")
		if err != nil {
			tb.Fatal(err)
		}
		s := &server{dir: dir}
		if err := s.start(bin); err != nil {
			tb.Fatal(err)
		}
		sharedSrv = s
	}
	return sharedSrv
}

func stopShared() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedSrv != nil {
		sharedSrv.kill()
		_ = os.RemoveAll(sharedSrv.dir)
		sharedSrv = nil
	}
}

func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// start runs redis-server (on a new free port, or on the same port again)
// and waits until it answers PING.
func (s *server) start(bin string) error {
	if s.port == 0 {
		p, err := freePort()
		if err != nil {
			return err
		}
		s.port = p
	}
	log, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--enable-debug-command", "local")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	s.cmd = cmd
	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("redis-server on %s did not answer within 10s: %w (log in %s)", s.addr(), err, s.dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill stops the server with SIGKILL and waits for it.
func (s *server) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	_ = s.cmd.Wait()
	s.cmd = nil
}

// restart kills the server and starts it again, empty, on the same port.
func (s *server) restart(tb testing.TB) {
	tb.Helper()
	s.kill()
	if err := s.start(redisServerPath(tb)); err != nil {
		tb.Fatal(err)
	}
}

// freePort returns a free loopback port, taken from the range
// DISTSEM_FAULTTEST_PORTS ("lo-hi") when it is set.
func freePort() (int, error) {
	lo, hi := 0, 0
	if r := os.Getenv("DISTSEM_FAULTTEST_PORTS"); r != "" {
		a, b, _ := strings.Cut(r, "-")
		lo, _ = strconv.Atoi(a)
		hi, _ = strconv.Atoi(b)
	}
	if lo <= 0 || hi < lo {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer ln.Close()
		return ln.Addr().(*net.TCPAddr).Port, nil
	}
	for i := 0; i < 4*(hi-lo+1); i++ {
		p := lo + int(randUint()%uint64(hi-lo+1))
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			_ = ln.Close()
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port in %d-%d", lo, hi)
}

func randUint() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}

// newClient returns a go-redis client with default options, as a new user
// would make it (opts may change it), closed when tb ends.
func newClient(tb testing.TB, addr string, opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: addr}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// prefix returns a key prefix of its own for tb.
func prefix(tb testing.TB) string {
	name := strings.NewReplacer("/", ".", " ", "_", "{", "", "}", "").Replace(tb.Name())
	return fmt.Sprintf("ft:%s:%x:", name, randUint()&0xffffff)
}
