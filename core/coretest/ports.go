package coretest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// envPorts names the range of loopback ports, "lo-hi" (both included), that
// the servers coretest starts listen on. Unset, they take any free port.
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
		return 0, 0, fmt.Errorf("coretest: %s=%q: want lo-hi, two ports with lo <= hi", envPorts, v)
	}
	return lo, hi, nil
}

// listenIn listens on a free loopback port in [lo, hi], or on any free
// port when hi is 0.
func listenIn(lo, hi int) (net.Listener, error) {
	if hi == 0 {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	n := hi - lo + 1
	for range 4 * n {
		port := lo + rand.IntN(n)
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			return l, nil
		}
	}
	return nil, fmt.Errorf("coretest: no free port in %s=%d-%d", envPorts, lo, hi)
}
