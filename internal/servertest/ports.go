package servertest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// envPorts names the range of loopback ports, "lo-hi" (both included), that
// the servers servertest starts listen on. Unset, they take any free port.
// Tests of several programs that share a machine each get their own range.
const envPorts = "DISTSEM_TEST_PORTS"

// portRange returns the range DISTSEM_TEST_PORTS gives, or 0, 0 when it is
// unset, and an error that names the variable when it is malformed.
func portRange() (lo, hi int, err error) {
	v := os.Getenv(envPorts)
	if v == "" {
		return 0, 0, nil
	}
	a, b, _ := strings.Cut(v, "-")
	lo, err1 := strconv.Atoi(a)
	hi, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || lo <= 0 || hi < lo || hi > 65535 {
		return 0, 0, fmt.Errorf("servertest: %s=%q: want lo-hi, two ports with lo <= hi", envPorts, v)
	}
	return lo, hi, nil
}

// reserved holds the ports of the servers this process started and has not
// closed for good. A killed server may be restarted on its port, so that
// port is not free for another server even though nothing listens on it.
var reserved struct {
	mu    sync.Mutex
	ports map[int]bool
}

// reserve marks ports as taken and reports whether none of them already
// was.
func reserve(ports ...int) bool {
	reserved.mu.Lock()
	defer reserved.mu.Unlock()
	for _, p := range ports {
		if reserved.ports[p] {
			return false
		}
	}
	if reserved.ports == nil {
		reserved.ports = make(map[int]bool)
	}
	for _, p := range ports {
		reserved.ports[p] = true
	}
	return true
}

// unreserve frees ports that reserve took.
func unreserve(ports ...int) {
	reserved.mu.Lock()
	defer reserved.mu.Unlock()
	for _, p := range ports {
		delete(reserved.ports, p)
	}
}

func isReserved(port int) bool {
	reserved.mu.Lock()
	defer reserved.mu.Unlock()
	return reserved.ports[port]
}

// listenIn listens on a free loopback port in [lo, hi], or on any free
// port when hi is 0, that is not reserved.
func listenIn(lo, hi int) (net.Listener, error) {
	if hi == 0 {
		for range 100 {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil || !isReserved(l.Addr().(*net.TCPAddr).Port) {
				return l, err
			}
			l.Close()
		}
		return nil, fmt.Errorf("servertest: no free loopback port that is not reserved")
	}
	// Each port once, in random order: a narrow range with most ports
	// reserved still finds the free one.
	for _, i := range rand.Perm(hi - lo + 1) {
		port := lo + i
		if isReserved(port) {
			continue
		}
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			return l, nil
		}
	}
	return nil, fmt.Errorf("servertest: no free port in %s=%d-%d", envPorts, lo, hi)
}
