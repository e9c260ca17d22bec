package faultproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo starts a line echo server and returns its address.
func echo(t *testing.T) string { return serve(t, nil) }

// serve starts a line echo server that also sends every line it reads to
// got, unless got is nil, and returns its address.
func serve(t *testing.T, got chan<- string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); echoLines(c, got) }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// echoLines writes back each line read from c, after sending it to got
// when got is not nil, until c fails.
func echoLines(c net.Conn, got chan<- string) {
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if got != nil {
			got <- line
		}
		if _, err := io.WriteString(c, line); err != nil {
			return
		}
	}
}

func start(t *testing.T) *Proxy {
	t.Helper()
	p, err := Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, bufio.NewReader(c)
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := r.ReadString('\n')
	if err != nil || line != msg+"\n" {
		t.Fatalf("read %q, %v; want %q", line, err, msg)
	}
}

func TestPass(t *testing.T) {
	p := start(t)
	c, r := dial(t, p)
	for _, m := range []string{"a", "bb", "ccc"} {
		roundTrip(t, c, r, m)
	}
}

func TestLatencyDelaysEachDirection(t *testing.T) {
	p := start(t)
	c, r := dial(t, p)
	roundTrip(t, c, r, "warm")
	p.SetLatency(Upstream, Latency{Fixed: 30 * time.Millisecond, Jitter: 10 * time.Millisecond})
	p.SetLatency(Downstream, Latency{Fixed: 40 * time.Millisecond})
	begin := time.Now()
	roundTrip(t, c, r, "slow")
	// A lower bound only: the delays are a minimum, whatever the load.
	if d := time.Since(begin); d < 60*time.Millisecond {
		t.Fatalf("round trip took %v, want at least 20+40 ms", d)
	}
}

func TestBlackholeHoldsThenDelivers(t *testing.T) {
	p := start(t)
	c, r := dial(t, p)
	roundTrip(t, c, r, "before")
	if err := p.SetMode(Blackhole); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, "held\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := r.ReadString('\n'); !isTimeout(err) {
		t.Fatalf("read under blackhole: %v, want a timeout", err)
	}
	// A new connection is accepted but answers nothing either.
	c2, r2 := dial(t, p)
	_, _ = io.WriteString(c2, "new\n")
	_ = c2.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := r2.ReadString('\n'); !isTimeout(err) {
		t.Fatalf("read on a new connection under blackhole: %v, want a timeout", err)
	}
	if err := p.SetMode(Pass); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Time{})
	_ = c2.SetReadDeadline(time.Time{})
	for _, x := range []struct {
		r   *bufio.Reader
		msg string
	}{{r, "held\n"}, {r2, "new\n"}} {
		if line, err := x.r.ReadString('\n'); err != nil || line != x.msg {
			t.Fatalf("after heal read %q, %v; want %q", line, err, x.msg)
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestResetClosesOpenAndNewConnections(t *testing.T) {
	p := start(t)
	c, r := dial(t, p)
	roundTrip(t, c, r, "x")
	if err := p.SetMode(Reset); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("open connection still readable after Reset")
	}
	// The listener is open, so the dial itself may succeed; either the dial
	// or the first read sees the reset.
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		_, _ = io.WriteString(c2, "y\n")
		_, err = bufio.NewReader(c2).ReadString('\n')
		_ = c2.Close()
		if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
			t.Fatalf("new connection under Reset: %v, want a reset", err)
		}
	} else if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("dial under Reset: %v, want a reset", err)
	}
	if err := p.SetMode(Pass); err != nil {
		t.Fatal(err)
	}
	c3, r3 := dial(t, p)
	roundTrip(t, c3, r3, "z")
}

func TestRefuseThenListenAgainOnSamePort(t *testing.T) {
	p := start(t)
	c, r := dial(t, p)
	roundTrip(t, c, r, "x")
	if err := p.SetMode(Refuse); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("open connection survived Refuse")
	}
	if _, err := net.Dial("tcp", p.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial under Refuse: %v, want connection refused", err)
	}
	if err := p.SetMode(Pass); err != nil {
		t.Fatal(err)
	}
	c2, r2 := dial(t, p)
	roundTrip(t, c2, r2, "again")
}

func TestModeSwitchesUnderTrafficAreSafe(t *testing.T) {
	p := start(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.Dial("tcp", p.Addr())
				if err != nil {
					continue
				}
				_ = c.SetDeadline(time.Now().Add(50 * time.Millisecond))
				_, _ = io.WriteString(c, "ping\n")
				_, _ = bufio.NewReader(c).ReadString('\n')
				_ = c.Close()
			}
		}()
	}
	modes := []Mode{Blackhole, Pass, Reset, Refuse, Pass}
	for i := range 50 {
		if err := p.SetMode(modes[i%len(modes)]); err != nil {
			t.Fatal(err)
		}
		p.SetLatency(Direction(i%2), Latency{Jitter: time.Millisecond})
		_ = p.Mode()
		_ = p.Conns()
	}
	close(stop)
	wg.Wait()
	c, r := dial(t, p)
	p.SetLatency(Upstream, Latency{})
	p.SetLatency(Downstream, Latency{})
	roundTrip(t, c, r, "still works")
}

func TestCloseEndsEverything(t *testing.T) {
	p, err := Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	c, r := dial(t, p)
	roundTrip(t, c, r, "x")
	_ = p.SetMode(Blackhole)
	_, _ = io.WriteString(c, "held\n")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.SetMode(Pass); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("SetMode after Close: %v, want net.ErrClosed", err)
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("connection open after Close")
	}
	if p.Conns() != 0 {
		t.Fatalf("Conns after Close = %d", p.Conns())
	}
	// goleak in TestMain checks that every goroutine has ended.
}
