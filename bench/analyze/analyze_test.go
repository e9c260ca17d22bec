package analyze

import (
	"bytes"
	"math"
	"testing"
	"time"
)

const (
	us = int64(time.Microsecond)
	ms = int64(time.Millisecond)
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestFIFOSimulation(t *testing.T) {
	s := &sim{limit: 4, workers: 32, hold: 2 * ms, rtt: 100 * us, wake: 200 * us, end: 2000 * ms, fifo: true}
	ev := s.run()
	r, err := Analyze(Input{Events: ev, Workers: simWorkers(32), Limit: 4, From: 200 * ms, To: 1800 * ms})
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxHolders != 4 || r.Violation {
		t.Errorf("max holders %d, violation %v; want 4, false", r.MaxHolders, r.Violation)
	}
	// Each permit cycles hold + rtt/2 (release reaches Redis) + wake.
	want := 2.0 / 2.25
	if !near(r.Util, want, 0.01) {
		t.Errorf("utilization %.4f, want %.4f", r.Util, want)
	}
	if !near(r.Throughput, 4/2.25e-3, 20) {
		t.Errorf("throughput %.1f, want %.1f", r.Throughput, 4/2.25e-3)
	}
	if r.SelfHandoff != 0 || r.SelfEligible < 2000 {
		t.Errorf("self-handoff %.4f of %d, want 0 of about 2800", r.SelfHandoff, r.SelfEligible)
	}
	if r.Jain < 0.99 {
		t.Errorf("jain %.4f, want ≥ 0.99", r.Jain)
	}
	if r.FIFOOutOfOrder != 0 {
		t.Errorf("fifo out-of-order %.4f, want 0", r.FIFOOutOfOrder)
	}
	// Round robin: every wait is 8 cycles minus the worker's own release.
	if float64(r.WaitP99) > 1.05*float64(r.WaitP50) {
		t.Errorf("wait p99 %v vs p50 %v: want nearly equal in a FIFO round robin", r.WaitP99, r.WaitP50)
	}
}

func TestBargingSimulation(t *testing.T) {
	s := &sim{limit: 4, workers: 32, hold: 2 * ms, rtt: 100 * us, wake: 200 * us, end: 1000 * ms}
	ev := s.run()
	r, err := Analyze(Input{Events: ev, Workers: simWorkers(32), Limit: 4, From: 100 * ms, To: 900 * ms})
	if err != nil {
		t.Fatal(err)
	}
	if r.Violation {
		t.Errorf("violation in a correct (barging) semaphore: %d holders", r.MaxHolders)
	}
	// The releaser's next check (1.5 rtt after its release started) always
	// beats the woken waiter's (rtt + wake): the first 4 holders keep the
	// permits for ever.
	if r.SelfHandoff < 0.99 {
		t.Errorf("self-handoff %.4f, want ≈ 1", r.SelfHandoff)
	}
	if !near(r.Jain, 4.0/32, 0.01) {
		t.Errorf("jain %.4f, want 0.125 (4 of 32 workers get everything)", r.Jain)
	}
}

func TestHandoffSplitLimitOne(t *testing.T) {
	s := &sim{limit: 1, workers: 4, hold: 1 * ms, rtt: 100 * us, wake: 200 * us, end: 500 * ms, fifo: true}
	ev := s.run()
	r, err := Analyze(Input{Events: ev, Workers: simWorkers(4), Limit: 1, From: 50 * ms, To: 450 * ms})
	if err != nil {
		t.Fatal(err)
	}
	if r.HandoffN < 300 || r.SplitN < 300 {
		t.Fatalf("hand-offs %d, matched by server time %d; want > 300 each", r.HandoffN, r.SplitN)
	}
	if r.MatchedP50 != 250*time.Microsecond {
		t.Errorf("matched hand-off p50 %v, want 250µs", r.MatchedP50)
	}
	if r.FIFOServerOutOfOrder != 0 {
		t.Errorf("fifo by server time %.4f, want 0", r.FIFOServerOutOfOrder)
	}
	if r.HandoffP50 != 250*time.Microsecond || r.HandoffP99 != 250*time.Microsecond {
		t.Errorf("hand-off p50 %v p99 %v, want 250µs", r.HandoffP50, r.HandoffP99)
	}
	if r.RelToScriptP50 != 50*time.Microsecond || r.ScriptToWaiterP50 != 200*time.Microsecond {
		t.Errorf("split %v + %v, want 50µs + 200µs", r.RelToScriptP50, r.ScriptToWaiterP50)
	}
}

func TestViolationDetected(t *testing.T) {
	var ev []Event
	for i := range 3 {
		ev = append(ev, Event{Proc: 0, Gor: int32(i), AcqStart: 0, Grant: 10 + int64(i), RelStart: 100, RelDone: 110})
	}
	r, err := Analyze(Input{Events: ev, Limit: 2, From: 0, To: 200})
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxHolders != 3 || !r.Violation {
		t.Errorf("max holders %d violation %v, want 3 true", r.MaxHolders, r.Violation)
	}
	var b bytes.Buffer
	r.Print(&b)
	if !bytes.Contains(b.Bytes(), []byte("VIOLATION")) {
		t.Errorf("report does not shout the violation:\n%s", b.String())
	}
}

func TestTouchingHoldsDoNotOverlap(t *testing.T) {
	// A release and the next grant at the same instant; and empty holds.
	ev := []Event{
		{Gor: 0, AcqStart: 0, Grant: 0, RelStart: 100, RelDone: 100},
		{Gor: 1, AcqStart: 0, Grant: 100, RelStart: 200, RelDone: 200},
		{Gor: 2, AcqStart: 0, Grant: 150, RelStart: 150, RelDone: 160},
	}
	if got := MaxHolders(ev); got != 1 {
		t.Errorf("MaxHolders = %d, want 1", got)
	}
}

func TestUtilizationClipsToWindow(t *testing.T) {
	ev := []Event{
		{Gor: 0, AcqStart: 0, Grant: 0, RelStart: 100, RelDone: 101},
		{Gor: 1, AcqStart: 0, Grant: 50, RelStart: 150, RelDone: 151},
	}
	r, err := Analyze(Input{Events: ev, Workers: []Worker{{0, 0}, {0, 1}}, Limit: 2, From: 0, To: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.Util, 150.0/200, 1e-9) {
		t.Errorf("util %.4f, want 0.75", r.Util)
	}
	if r.Grants != 2 || !near(r.Throughput, 2/100e-9, 1) {
		t.Errorf("grants %d throughput %.0f", r.Grants, r.Throughput)
	}
}

func TestJainAndIdleWorkers(t *testing.T) {
	if j := Jain([]float64{3, 3, 3, 3}); !near(j, 1, 1e-12) {
		t.Errorf("equal shares: %f", j)
	}
	if j := Jain([]float64{4, 0, 0, 0}); !near(j, 0.25, 1e-12) {
		t.Errorf("one takes all: %f", j)
	}
	// A worker that never got a grant must pull the index down.
	ev := []Event{
		{Gor: 0, AcqStart: 0, Grant: 1, RelStart: 2, RelDone: 3},
		{Gor: 0, AcqStart: 3, Grant: 4, RelStart: 5, RelDone: 6},
	}
	r, err := Analyze(Input{Events: ev, Workers: []Worker{{0, 0}, {0, 1}}, Limit: 1, From: 0, To: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.Jain, 0.5, 1e-12) {
		t.Errorf("jain with an idle worker %f, want 0.5", r.Jain)
	}
}

func TestPercentileNearestRank(t *testing.T) {
	xs := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want int64
	}{{0.5, 5}, {0.99, 10}, {0.1, 1}, {1, 10}} {
		if got := Percentile(xs, c.p); got != c.want {
			t.Errorf("p%.2f = %d, want %d", c.p, got, c.want)
		}
	}
	if Percentile(nil, .5) != 0 {
		t.Error("empty percentile not 0")
	}
}

func TestFIFOTolerance(t *testing.T) {
	// B starts 10 after A but returns 50 before it.
	ev := []Event{
		{Gor: 0, AcqStart: 0, Grant: 100, RelStart: 101, RelDone: 102},
		{Gor: 1, AcqStart: 10, Grant: 50, RelStart: 51, RelDone: 52},
	}
	for _, c := range []struct {
		tol  time.Duration
		want float64
	}{{0, 0.5}, {5, 0.5}, {10, 0}, {60, 0}} {
		r, err := Analyze(Input{Events: ev, Limit: 2, From: 0, To: 200, FIFOTolerance: c.tol})
		if err != nil {
			t.Fatal(err)
		}
		if r.FIFOOutOfOrder != c.want {
			t.Errorf("tol %v: out-of-order %.2f, want %.2f", c.tol, r.FIFOOutOfOrder, c.want)
		}
	}
}

func TestSelfHandoffNeedsAWaiter(t *testing.T) {
	// Worker 0 releases and gets the permit back. The first time worker 1
	// is waiting (self-handoff); the second time nobody waits (not
	// eligible).
	ev := []Event{
		{Gor: 0, AcqStart: 0, Grant: 1, RelStart: 10, RelDone: 11},
		{Gor: 1, AcqStart: 5, Grant: 30, RelStart: 40, RelDone: 41},
		{Gor: 0, AcqStart: 11, Grant: 12, RelStart: 20, RelDone: 21},
		{Gor: 0, AcqStart: 50, Grant: 51, RelStart: 60, RelDone: 61},
		{Gor: 0, AcqStart: 61, Grant: 62, RelStart: 70, RelDone: 71},
	}
	r, err := Analyze(Input{Events: ev, Limit: 1, From: 0, To: 100})
	if err != nil {
		t.Fatal(err)
	}
	if r.SelfEligible != 2 || r.SelfHandoff != 0.5 {
		t.Errorf("self-handoff %.2f of %d, want 0.5 of 2", r.SelfHandoff, r.SelfEligible)
	}
}

func TestEventsRoundTrip(t *testing.T) {
	in := []Event{
		{Proc: 3, Gor: 7, AcqStart: 1, Grant: 2, RelStart: 3, RelDone: 4, ServerGrant: 5, Token: -6},
		{Proc: 0, Gor: 0, AcqStart: 1 << 62, Grant: 1 << 62, RelStart: 1 << 62, RelDone: 1<<62 + 1},
	}
	var b bytes.Buffer
	if err := WriteEvents(&b, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadEvents(bytes.NewReader(b.Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) || out[0] != in[0] || out[1] != in[1] {
		t.Fatalf("round trip: got %+v", out)
	}
	if _, err := ReadEvents(bytes.NewReader(b.Bytes()[:b.Len()-3]), nil); err == nil {
		t.Error("truncated file read without error")
	}
	if _, err := ReadEvents(bytes.NewReader([]byte("nope!!xx")), nil); err == nil {
		t.Error("bad header read without error")
	}
}

func TestRejectsBadInput(t *testing.T) {
	if _, err := Analyze(Input{Limit: 0, From: 0, To: 1}); err == nil {
		t.Error("limit 0 accepted")
	}
	if _, err := Analyze(Input{Limit: 1, From: 5, To: 5}); err == nil {
		t.Error("empty window accepted")
	}
	bad := []Event{{AcqStart: 10, Grant: 5, RelStart: 20, RelDone: 30}}
	if _, err := Analyze(Input{Events: bad, Limit: 1, From: 0, To: 100}); err == nil {
		t.Error("grant before acquire start accepted")
	}
}

func TestSplitMatchesByServerTime(t *testing.T) {
	// Limit 2. A releases at 100 (in flight until 200; its script hands
	// the permit to C at 150, whose process wakes late, at 400). B
	// releases at 300 (script at 350 hands to D, back at 360). The first
	// waiter back after A's release is D, but by server time C is A's.
	ev := []Event{
		{Gor: 0, AcqStart: 0, Grant: 1, RelStart: 100, RelDone: 200},
		{Gor: 1, AcqStart: 0, Grant: 2, RelStart: 300, RelDone: 400},
		{Gor: 2, AcqStart: 10, Grant: 400, RelStart: 500, RelDone: 510, ServerGrant: 150},
		{Gor: 3, AcqStart: 20, Grant: 360, RelStart: 600, RelDone: 610, ServerGrant: 350},
	}
	r, err := Analyze(Input{Events: ev, Limit: 2, From: 0, To: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if r.SplitN != 2 {
		t.Fatalf("matched %d grants, want 2", r.SplitN)
	}
	// Pairs (50, 250) and (50, 10): nearest-rank p50 takes the lower.
	if r.RelToScriptP50 != 50 || r.RelToScriptP99 != 50 {
		t.Errorf("release→script %v/%v, want 50ns both", r.RelToScriptP50, r.RelToScriptP99)
	}
	if r.ScriptToWaiterP50 != 10 || r.ScriptToWaiterP99 != 250 {
		t.Errorf("script→waiter %v/%v, want 10ns/250ns", r.ScriptToWaiterP50, r.ScriptToWaiterP99)
	}
	// Without server times there is no split and no server FIFO figure.
	for i := range ev {
		ev[i].ServerGrant = 0
	}
	r, err = Analyze(Input{Events: ev, Limit: 2, From: 0, To: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if r.SplitN != 0 || r.FIFOServerOutOfOrder != -1 {
		t.Errorf("without server times: split %d, server fifo %.2f; want 0, -1", r.SplitN, r.FIFOServerOutOfOrder)
	}
}

func TestFIFOByServerTime(t *testing.T) {
	// B started after A and its process returned first, but the server
	// granted A first: out of order by client time, in order by server.
	ev := []Event{
		{Gor: 0, AcqStart: 0, Grant: 5000, RelStart: 5001, RelDone: 5002, ServerGrant: 1000},
		{Gor: 1, AcqStart: 100, Grant: 3000, RelStart: 3001, RelDone: 3002, ServerGrant: 2000},
	}
	r, err := Analyze(Input{Events: ev, Limit: 2, From: 0, To: 10000, FIFOTolerance: 10})
	if err != nil {
		t.Fatal(err)
	}
	if r.FIFOOutOfOrder != 0.5 || r.FIFOServerOutOfOrder != 0 {
		t.Errorf("client %.2f server %.2f, want 0.5 and 0", r.FIFOOutOfOrder, r.FIFOServerOutOfOrder)
	}
}

// A release that makes a round trip shows in the release and in the wait +
// release figures, not in the wait.
func TestReleaseAndCost(t *testing.T) {
	var ev []Event
	for i := range int64(100) {
		a := i * 10 * ms
		// Waits of 1 ms, releases of 2 ms; the last grant waits 5 ms and
		// releases at once.
		wait, rel := 1*ms, 2*ms
		if i == 99 {
			wait, rel = 5*ms, 0
		}
		ev = append(ev, Event{AcqStart: a, Grant: a + wait, RelStart: a + wait + ms, RelDone: a + wait + ms + rel})
	}
	r, err := Analyze(Input{Events: ev, Workers: []Worker{{}}, Limit: 1, From: 0, To: 1000 * ms})
	if err != nil {
		t.Fatal(err)
	}
	if r.WaitP50 != time.Millisecond || r.ReleaseP50 != 2*time.Millisecond || r.CostP50 != 3*time.Millisecond {
		t.Errorf("p50 wait %v release %v cost %v; want 1ms, 2ms, 3ms", r.WaitP50, r.ReleaseP50, r.CostP50)
	}
	if r.ReleaseP99 != 2*time.Millisecond || r.CostP99 != 3*time.Millisecond {
		t.Errorf("p99 release %v cost %v; want 2ms, 3ms (the one 5 ms wait costs 5 ms in all, above p99 of 100)", r.ReleaseP99, r.CostP99)
	}
	var out bytes.Buffer
	r.Print(&out)
	if !bytes.Contains(out.Bytes(), []byte("release p50 2.000ms p99 2.000ms; wait + release p50 3.000ms p99 3.000ms")) {
		t.Errorf("printed report lacks the release line:\n%s", out.String())
	}
}
