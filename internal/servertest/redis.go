package servertest

import (
	"errors"
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
)

// RedisServer is a redis-server process started by a test on a free
// loopback port, with no persistence (`--save ” --appendonly no`), the
// DEBUG command allowed from loopback, and its own scratch directory. It is
// meant for tests that break the server on purpose; tests that only need
// some Redis call RedisAddr.
//
// The server dies with the test binary however that exits (the kernel
// sends it SIGKILL when its parent dies), and StartRedis also stops it in
// the test's cleanup. Its methods are safe for concurrent use, except that
// Restart must be called from the test's goroutine (it fails the test).
type RedisServer struct {
	tb testing.TB
	mu sync.Mutex
	r  *redisProc
}

// StartRedis starts a redis-server with the default arguments followed by
// args (later ones win, as on redis-server's command line), and returns
// once the server logs "Ready to accept connections", which it does once
// it listens on all its ports (also --tls-port). It skips the test when
// redis-server is not on PATH, or fails it when CI is set; it fails the
// test when the server does not start. The server is stopped, and its directory removed, when the test
// and its subtests complete.
func StartRedis(tb testing.TB, args ...string) *RedisServer {
	tb.Helper()
	r, err := startRedisProc(false, args...)
	if err != nil {
		unavailable(tb, "redis-server", err)
	}
	s := &RedisServer{tb: tb, r: r}
	tb.Cleanup(s.Stop)
	return s
}

// Addr returns the server's host:port. It stays the same across Restart.
func (s *RedisServer) Addr() string { return s.r.addr() }

// Dir returns the server's working directory (its `--dir`).
func (s *RedisServer) Dir() string { return s.r.dir }

// Kill sends SIGKILL to the server and returns once the process is gone:
// connections to Addr are then refused, and open ones see EOF or a reset.
// Killing a dead server does nothing. Its port stays reserved for Restart:
// no server that servertest starts meanwhile takes it.
func (s *RedisServer) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r.kill()
}

// Pause stops the server with SIGSTOP: it keeps its connections open and
// answers nothing, as a stalled or partitioned server would, until Resume.
func (s *RedisServer) Pause() { s.signal(syscall.SIGSTOP) }

// Resume lets a paused server go on (SIGCONT).
func (s *RedisServer) Resume() { s.signal(syscall.SIGCONT) }

func (s *RedisServer) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r.p == nil {
		return
	}
	if err := s.r.p.signal(sig); err != nil {
		s.tb.Errorf("servertest: signal redis-server: %v", err)
	}
}

// Restart kills the server if it runs, then starts it again on the same
// port with the same arguments and an empty data set (its directory is
// emptied first), and returns once it says it is ready, as StartRedis
// does. It fails the test when the server does not come back within 10
// seconds.
func (s *RedisServer) Restart() {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r.kill()
	if err := s.r.clearDir(); err != nil {
		s.tb.Fatalf("servertest: restart redis-server: %v", err)
	}
	if err := s.r.start(); err != nil {
		s.tb.Fatalf("servertest: restart redis-server on %s: %v", s.r.addr(), err)
	}
}

// Stop kills the server for good, removes its directory and frees its port
// for the servers servertest starts later. Calling it again does nothing.
// StartRedis registers it with tb.Cleanup.
func (s *RedisServer) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r.stop()
}

// redisProc is one redis-server (or redis-sentinel, with mode "--sentinel")
// process that may be killed and started again on the same port.
type redisProc struct {
	bin  string
	port int
	dir  string
	args []string // after the defaults
	conf string   // config file passed first (Sentinel needs one)
	p    *proc
	// bus is set for a Cluster node, which also holds port+10000.
	bus bool
	// reserved is set while the node's ports are reserved: from its
	// start until stop, across kill and restart.
	reserved bool
}

// errNotInstalled is wrapped when a server's binary is not on PATH: only
// then does a test skip (outside CI) rather than fail.
var errNotInstalled = errors.New("not installed")

// startRedisProc starts a redis-server on a free port, trying other ports
// if one was taken meanwhile. With bus, port+10000 (Cluster's bus) is free
// too.
func startRedisProc(bus bool, args ...string) (*redisProc, error) {
	return startRedisBin("redis-server", "", bus, args...)
}

// startRedisBin starts the binary bin (redis-server or redis-sentinel),
// first writing conf, when not empty, to a configuration file that is
// passed first on the command line.
func startRedisBin(name, conf string, bus bool, args ...string) (*redisProc, error) {
	if !autostartSupported {
		return nil, fmt.Errorf("%s: %w (%v)", name, errNotInstalled, errUnsupportedOS)
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("%s %w on PATH", name, errNotInstalled)
	}
	sweepOnce.Do(sweepStaleDirs)
	// The directory names this process, so that a later test binary can
	// remove it if this one was killed before it could.
	dir, err := os.MkdirTemp("", fmt.Sprintf("distsem-redis-%d-", os.Getpid()))
	if err != nil {
		return nil, err
	}
	r := &redisProc{bin: bin, dir: dir, args: args, bus: bus}
	if conf != "" {
		r.conf = filepath.Join(dir, "redis.conf")
		if err := os.WriteFile(r.conf, []byte(conf), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	for range 5 {
		if r.port, err = freePort(bus); err != nil {
			break
		}
		r.reserved = true
		if err = r.start(); err == nil {
			return r, nil
		}
		r.release()
	}
	os.RemoveAll(dir)
	return nil, err
}

func (r *redisProc) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

func (r *redisProc) start() error {
	var argv []string
	if r.conf != "" {
		argv = append(argv, r.conf)
	}
	argv = append(argv, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir,
		"--logfile", filepath.Join(r.dir, "redis.log"), "--daemonize", "no")
	if r.conf == "" {
		argv = append(argv, "--enable-debug-command", "local")
	}
	argv = append(argv, r.args...)
	logf := filepath.Join(r.dir, "redis.log")
	off := fileSize(logf) // an earlier start's lines are not this one's
	cmd := exec.Command(r.bin, argv...)
	p, err := startProc(cmd, syscall.SIGKILL, nil)
	if err != nil {
		return err
	}
	r.p = p
	// The server's own signal: it logs this once it listens (a Sentinel
	// once it runs its monitoring).
	name, ready := "redis-server", "Ready to accept connections"
	if filepath.Base(r.bin) == "redis-sentinel" {
		name, ready = "redis-sentinel", "Sentinel ID is"
	}
	switch err := waitLog(p.pid, p.alive, logf, off, ready, readyTimeout); {
	case errors.Is(err, errExited):
		return fmt.Errorf("%s on port %d exited: %s", name, r.port, tail(logf))
	case err != nil:
		r.kill()
		return fmt.Errorf("%s on port %d did not log %q within %v (%v): %s", name, r.port, ready, readyTimeout, err, tail(logf))
	}
	return nil
}

// readyTimeout bounds how long a starting redis-server may take to say it
// is ready: generous, for a loaded CI machine.
const readyTimeout = 10 * time.Second

func (r *redisProc) kill() {
	if r.p != nil {
		r.p.signalAndWait(syscall.SIGKILL, 10*time.Second)
	}
}

// stop kills the server for good: it removes its directory and frees its
// ports for other servers. Calling it again does nothing more.
func (r *redisProc) stop() {
	r.kill()
	os.RemoveAll(r.dir)
	r.release()
}

// release frees the server's ports, once.
func (r *redisProc) release() {
	if r.reserved {
		r.reserved = false
		unreserve(portsOf(r.port, r.bus)...)
	}
}

// clearDir removes everything in the server's directory, keeping a Sentinel
// configuration file (which the next start rewrites).
func (r *redisProc) clearDir() error {
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if p := filepath.Join(r.dir, e.Name()); p != r.conf {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
	}
	return nil
}

var sweepOnce sync.Once

// sweepStaleDirs removes the directories of servers whose test binary is
// gone (it was killed, or exited without StopServers). Each one's server
// died with that binary.
func sweepStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "distsem-redis-*-*"))
	for _, dir := range dirs {
		f := strings.Split(filepath.Base(dir), "-")
		if pid, err := strconv.Atoi(f[2]); err == nil && len(f) == 4 && pid != os.Getpid() && !processExists(pid) {
			os.RemoveAll(dir)
		}
	}
}

// freePort returns a loopback port that was free a moment ago and, with
// bus, whose port+10000 was free too. The port is in the range that
// DISTSEM_TEST_PORTS gives, when it is set. It reserves the port (and the
// bus port) for the caller, which frees them with unreserve(portsOf(port,
// bus)...) once its server is closed for good.
func freePort(bus bool) (int, error) {
	lo, hi, err := portRange()
	if err != nil {
		return 0, err
	}
	for range 100 {
		l, err := listenIn(lo, hi)
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !bus {
			if reserve(port) {
				return port, nil
			}
			continue // another goroutine took it meanwhile
		}
		if port+10000 > 65535 || isReserved(port+10000) {
			continue
		}
		if l2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000))); err == nil {
			l2.Close()
			if reserve(port, port+10000) {
				return port, nil
			}
		}
	}
	if !bus {
		return 0, errors.New("no free loopback port")
	}
	return 0, errors.New("no free loopback port pair for a Cluster node")
}

// portsOf returns the ports a server on port holds: port and, with bus (a
// Cluster node), port+10000.
func portsOf(port int, bus bool) []int {
	if bus {
		return []int{port, port + 10000}
	}
	return []int{port}
}

// tail returns the last lines of a log file, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}
