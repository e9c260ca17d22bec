package consul_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"go.uber.org/goleak"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/internal/testwait"
)

// The tests run against one real `consul agent -dev` that TestMain starts on
// free loopback ports and stops at the end. The binary is DISTSEM_CONSUL_BIN,
// or `consul` on PATH (.ci/run builds it). Without it the tests skip, and
// fail when CI is set.
var (
	agentAddr string // host:port of the agent's HTTP API
	agentErr  error  // why there is no agent
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(childEnv); addr != "" {
		os.Exit(runChild(addr))
	}
	a, err := startAgent()
	if err != nil {
		agentErr = err
	} else {
		agentAddr = a.addr
	}
	code := m.Run()
	if a != nil {
		a.kill()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

type agent struct {
	addr string
	cmd  *exec.Cmd
	dir  string
}

func (a *agent) kill() {
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
	_ = os.RemoveAll(a.dir)
}

func consulBinary() (string, error) {
	if b := os.Getenv("DISTSEM_CONSUL_BIN"); b != "" {
		return b, nil
	}
	b, err := exec.LookPath("consul")
	if err != nil {
		return "", errors.New("no consul binary: set DISTSEM_CONSUL_BIN or put consul on PATH (.ci/run builds it)")
	}
	return b, nil
}

// freePorts returns n loopback TCP ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// startAgent starts a dev agent (in-memory Raft, leader at once) and waits
// for its leader. session_ttl_min is lowered so that tests of expiry can
// use short leases.
func startAgent() (*agent, error) {
	bin, err := consulBinary()
	if err != nil {
		return nil, err
	}
	p, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "distsem-consul-")
	if err != nil {
		return nil, err
	}
	s := strconv.Itoa
	cmd := exec.Command(bin, "agent", "-dev", "-bind", "127.0.0.1", "-client", "127.0.0.1", "-advertise", "127.0.0.1",
		"-http-port", s(p[0]), "-dns-port", "-1", "-grpc-port", "-1", "-grpc-tls-port", "-1",
		"-server-port", s(p[1]), "-serf-lan-port", s(p[2]), "-serf-wan-port", s(p[3]),
		"-hcl", `session_ttl_min = "1s"`, "-log-level", "warn")
	log, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	a := &agent{addr: "127.0.0.1:" + s(p[0]), cmd: cmd, dir: dir}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ready(a.addr) {
			http.DefaultClient.CloseIdleConnections()
			return a, nil
		}
		if time.Now().After(deadline) {
			a.kill()
			return nil, fmt.Errorf("consul agent has no leader after 60s (log: %s)", log.Name())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ready reports whether the agent at addr has a leader and has registered
// its node: before that, creating a session fails with "Missing node
// registration" (a test that ran first failed so about once in five runs).
func ready(addr string) bool {
	for _, path := range []string{"/v1/status/leader", "/v1/catalog/nodes"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return false
		}
		var b [64]byte
		n, _ := io.ReadFull(resp.Body, b[:])
		_ = resp.Body.Close()
		if n <= 2 || string(b[:n]) == `""` { // no leader; [] no node
			return false
		}
	}
	return true
}

// newClient returns a client of the test agent whose idle connections
// are closed at t's cleanup, after the semaphores made later are closed.
// It skips t without an agent, and fails it under CI.
func newClient(t *testing.T) *api.Client {
	t.Helper()
	if agentErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI needs a consul agent: %v", agentErr)
		}
		t.Skip(agentErr)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	c, err := api.NewClient(&api.Config{Address: agentAddr, HttpClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return c
}

var prefixSeq atomic.Int64

// uniquePrefix keeps tests that share the agent apart.
func uniquePrefix() string {
	return fmt.Sprintf("t%d-%d/", time.Now().UnixNano(), prefixSeq.Add(1))
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func background() context.Context { return context.Background() }

type statser interface {
	Stats(context.Context) (core.Stats, error)
}

func stats(t *testing.T, s statser) core.Stats {
	t.Helper()
	st, err := s.Stats(context.Background())
	ok(t, err)
	return st
}

// waitQueued blocks until n callers are queued, observing Stats; it gives
// up after a minute.
func waitQueued(t *testing.T, s statser, n int64) {
	t.Helper()
	testwait.Until(t, time.Minute, fmt.Sprintf("fewer than %d callers queued", n), func() bool {
		st := stats(t, s)
		if st.Waiting > n {
			t.Fatalf("waiting = %d, want %d", st.Waiting, n)
		}
		return st.Waiting == n
	})
}

func wantStats(t *testing.T, s statser, inUse, waiting int64) {
	t.Helper()
	if st := stats(t, s); st.InUse != inUse || st.Waiting != waiting {
		t.Fatalf("stats = %+v, want in use %d, waiting %d", st, inUse, waiting)
	}
}
