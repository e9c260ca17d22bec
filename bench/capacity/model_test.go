package main

import (
	"strings"
	"testing"
	"time"
)

func TestCmdstatParsesCallsAndUsec(t *testing.T) {
	calls, usec := cmdstat("calls=40001,usec=1007102,usec_per_call=25.18,rejected_calls=0,failed_calls=0")
	if calls != 40001 || usec != 1007102 {
		t.Fatalf("cmdstat = %d, %d; want 40001, 1007102", calls, usec)
	}
}

// The model charges each renewal and each grant its measured server CPU:
// 1 000 processes with 100 leases each on 6 masters, renewing every 10s/3,
// run 5 000 renewals/s per master.
func TestModelCountsRenewalsPerMaster(t *testing.T) {
	ph := func(name string, us float64) *phase {
		p := &phase{name: name, ops: 1, seconds: 1, cpuPerOpUS: us}
		p.after.scripts = 1
		return p
	}
	ps := []*phase{ph("pairs", 40), ph("spread", 60), ph("handoffs", 50), ph("heartbeats", 30),
		ph("leased-pairs", 0), ph("leased-beats", 20)}
	var b strings.Builder
	printModel(&b, scenario{procs: 1000, sems: 10000, shards: 6, ttl: 10 * time.Second, rate: 100, pool: 10, maxClients: 10000}, ps, 100)
	out := b.String()
	for _, want := range []string{
		"grants per master: 16667/s, 1.00 cores at 60.0 µs each", // the larger of spread and hand-off
		"| 100 | 5000 | 0.15 | 1.15 | 0.10 |",
		"up to 11000 (pool 10 + 1 pub/sub, per process)",
		"every semaphore: 1666667, 159 MiB",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("model output lacks %q:\n%s", want, out)
		}
	}
}
