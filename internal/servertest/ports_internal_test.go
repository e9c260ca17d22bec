package servertest

import (
	"testing"
)

// A killed server's port stays reserved until the server is stopped for
// good: in a range of one port, no other server gets it meanwhile, so the
// killed one can restart on it; once stopped, the port is free again. The
// port and its Cluster bus port (+10000) stay below Linux's ephemeral range
// (32768-60999), where an outgoing connection of another test may hold the
// bus port and the node then cannot start, and outside .ci/run's own ports
// (20000-22767, buses 30000-32767).
func TestKilledServerKeepsItsPort(t *testing.T) {
	const rng, busRng = "19420-19420", "29420-29420"
	for _, bus := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "cluster-bus"}[bus]
		t.Run(name, func(t *testing.T) {
			t.Setenv(envPorts, rng)
			r, err := startRedisProc(bus)
			if err != nil {
				unavailable(t, "redis-server", err)
			}
			defer r.stop()
			r.kill()
			if o, err := startRedisProc(false); err == nil {
				o.stop()
				t.Fatalf("the port %d of a killed server went to another server before the restart", r.port)
			}
			if bus {
				// The bus port is reserved too.
				t.Setenv(envPorts, busRng)
				if o, err := startRedisProc(false); err == nil {
					o.stop()
					t.Fatalf("the bus port %d of a killed Cluster node went to another server", r.port+10000)
				}
				t.Setenv(envPorts, rng)
			}
			if err := r.clearDir(); err != nil {
				t.Fatal(err)
			}
			if err := r.start(); err != nil {
				t.Fatalf("restart on port %d: %v", r.port, err)
			}
			r.stop()
			o, err := startRedisProc(false)
			if err != nil {
				t.Fatalf("the port of a stopped server is not free again: %v", err)
			}
			o.stop()
			if o.port != r.port {
				t.Fatalf("got port %d, want %d", o.port, r.port)
			}
		})
	}
}

// A narrow range whose ports are all reserved but one still finds that
// one, whatever order the ports are tried in.
func TestFreePortNarrowRange(t *testing.T) {
	t.Setenv(envPorts, "27421-27440")
	var taken []int
	for p := 27421; p < 27440; p++ {
		if !reserve(p) {
			t.Fatalf("port %d already reserved", p)
		}
		taken = append(taken, p)
	}
	defer unreserve(taken...)
	for range 20 {
		p, err := freePort(false)
		if err != nil {
			t.Fatal(err)
		}
		unreserve(p)
		if p != 27440 {
			t.Fatalf("got reserved port %d", p)
		}
	}
}
