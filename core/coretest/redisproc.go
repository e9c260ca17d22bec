package coretest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// RedisProc is a redis-server process that a test started on a free
// loopback port, without persistence, for tests that kill, stall or
// restart servers. It is stopped when the test ends.
type RedisProc struct {
	Addr string
	port int
	dir  string
	tb   testing.TB

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
}

var portSeq atomic.Int64

// StartRedis starts a redis-server on 127.0.0.1 and returns when it
// answers. Without a redis-server binary the test is skipped, or fails
// when CI is set. Ports are free ones chosen by the kernel, or, when
// DISTSEM_REDIS_PORT_BASE is set, the free ones counting up from it.
func StartRedis(tb testing.TB) *RedisProc {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("redis-server not found: CI must install it: %v", err)
		}
		tb.Skipf("redis-server not found: %v", err)
	}
	r := &RedisProc{dir: tb.TempDir(), tb: tb}
	tb.Cleanup(r.Kill)
	var err error
	for range 3 { // a port found free may be taken before the server binds it
		r.port = freePort(tb)
		r.Addr = "127.0.0.1:" + strconv.Itoa(r.port)
		if err = r.start(); err == nil {
			return r
		}
	}
	tb.Fatal(err)
	return nil
}

func freePort(tb testing.TB) int {
	if base, err := strconv.Atoi(os.Getenv("DISTSEM_REDIS_PORT_BASE")); err == nil {
		for range 500 {
			p := base + int(portSeq.Add(1)) - 1
			if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
				_ = l.Close()
				return p
			}
		}
		tb.Fatalf("no free port from DISTSEM_REDIS_PORT_BASE=%d", base)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts the server again (empty) after Kill; it returns when the
// server answers PING.
func (r *RedisProc) Start() {
	r.tb.Helper()
	if err := r.start(); err != nil {
		r.tb.Fatal(err)
	}
}

func (r *RedisProc) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return nil
	}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir, "--enable-debug-command", "yes",
		"--logfile", filepath.Join(r.dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	r.cmd, r.exited = cmd, exited
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", r.Addr, time.Second)
		if err == nil {
			_, err = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 16)
			n := 0
			if err == nil {
				_ = c.SetReadDeadline(time.Now().Add(time.Second))
				n, err = c.Read(buf)
			}
			_ = c.Close()
			if err == nil && string(buf[:n]) == "+PONG\r\n" {
				return nil
			}
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
			r.cmd = nil
			return fmt.Errorf("redis-server on %s exited: %s", r.Addr, log)
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			r.cmd = nil
			return fmt.Errorf("redis-server on %s did not answer: %v", r.Addr, err)
		}
		time.Sleep(10 * time.Millisecond) // polling a starting process: no event to wait on
	}
}

// Kill stops the server with SIGKILL and waits for it to exit: it loses
// everything. It does nothing if the server is not running.
func (r *RedisProc) Kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.exited
	r.cmd = nil
}

// Pause stops the server with SIGSTOP: it keeps its connections and data
// but answers nothing until Resume.
func (r *RedisProc) Pause() { r.signal(syscall.SIGSTOP) }

// Resume lets a paused server go on (SIGCONT).
func (r *RedisProc) Resume() { r.signal(syscall.SIGCONT) }

func (r *RedisProc) signal(sig os.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		if err := r.cmd.Process.Signal(sig); err != nil {
			r.tb.Errorf("signal redis-server: %v", err)
		}
	}
}

// Restart kills the server and starts it again, empty, on the same port.
func (r *RedisProc) Restart() {
	r.Kill()
	r.Start()
}
