package faultproxy

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// startRecorded starts a Proxy in front of a line echo server that sends
// every line it reads to the returned channel.
func startRecorded(t *testing.T) (*Proxy, <-chan string) {
	t.Helper()
	got := make(chan string, 100)
	p, err := Start(serve(t, got))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, got
}

// wantHeld fails unless nothing can be read from c for 100ms.
func wantHeld(t *testing.T, c net.Conn, r *bufio.Reader, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if line, err := r.ReadString('\n'); !isTimeout(err) {
		t.Fatalf("%s: read %q, %v; want a timeout", what, line, err)
	}
	_ = c.SetReadDeadline(time.Time{})
}

func TestHoldOneDirection(t *testing.T) {
	p, got := startRecorded(t)
	c, r := dial(t, p)
	roundTrip(t, c, r, "before")
	<-got
	p.SetHold(All, Downstream, true)
	if _, err := io.WriteString(c, "up\n"); err != nil {
		t.Fatal(err)
	}
	if line := <-got; line != "up\n" {
		t.Fatalf("upstream got %q, want the request: only replies are held", line)
	}
	wantHeld(t, c, r, "reply under a downstream hold")
	p.SetHold(All, Downstream, false)
	if line, err := r.ReadString('\n'); err != nil || line != "up\n" {
		t.Fatalf("after the hold read %q, %v; want the held reply", line, err)
	}
}

func TestTaggedConnectionsHeldAndResetApart(t *testing.T) {
	p, _ := startRecorded(t)
	p.SetTag("SUBSCRIBE")
	sub, rs := dial(t, p)
	roundTrip(t, sub, rs, "please subscribe me")
	cmd, rc := dial(t, p)
	roundTrip(t, cmd, rc, "get")

	p.SetHold(Tagged, Downstream, true)
	roundTrip(t, cmd, rc, "untagged passes")
	if _, err := io.WriteString(sub, "message\n"); err != nil {
		t.Fatal(err)
	}
	wantHeld(t, sub, rs, "tagged reply under a tagged hold")
	p.SetHold(Tagged, Downstream, false)
	if line, err := rs.ReadString('\n'); err != nil || line != "message\n" {
		t.Fatalf("after the hold read %q, %v; want the held message", line, err)
	}

	p.ResetOpen(Untagged)
	if _, err := rc.ReadString('\n'); err == nil {
		t.Fatal("untagged connection still open after ResetOpen(Untagged)")
	}
	roundTrip(t, sub, rs, "tagged survives")
	c2, r2 := dial(t, p) // later connections are not reset
	roundTrip(t, c2, r2, "new")
}

func TestDuplicateSendsEachRequestTwice(t *testing.T) {
	p, got := startRecorded(t)
	c, r := dial(t, p)
	roundTrip(t, c, r, "once")
	if line := <-got; line != "once\n" {
		t.Fatalf("upstream got %q", line)
	}
	p.SetDuplicate(true)
	roundTrip(t, c, r, "twice")
	// The copy goes out after the original's reply may have come back:
	// duplicate delivery is turned off only once both arrived.
	lines := []string{next(t, got), next(t, got)}
	p.SetDuplicate(false)
	roundTrip(t, c, r, "once more")
	lines = append(lines, next(t, got))
	if lines[0] != "twice\n" || lines[1] != "twice\n" || lines[2] != "once more\n" {
		t.Fatalf("upstream got %q, want the duplicated request twice, then the next once", lines)
	}
	select {
	case line := <-got:
		t.Fatalf("upstream got %q after duplicate delivery was turned off", line)
	default:
	}
}

// next returns the next line the upstream got, failing after 10s.
func next(t *testing.T, got <-chan string) string {
	t.Helper()
	select {
	case line := <-got:
		return line
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream got no line within 10s")
		return ""
	}
}
