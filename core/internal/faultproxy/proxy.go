// Package faultproxy is a small in-process TCP proxy for fault tests.
//
// A Proxy listens on a loopback port and forwards every connection to one
// upstream address. Its Mode can be switched at run time, from any goroutine,
// to inject a network fault between a client and a server:
//
//   - Pass forwards bytes as they come (after any configured Latency);
//   - Blackhole accepts connections and reads bytes but answers nothing: bytes
//     are held (not dropped) and delivered, in order, when the mode returns to
//     Pass or Latency, as TCP would after a partition heals;
//   - Reset closes every open connection with a TCP RST and resets new ones
//     as soon as they are accepted;
//   - Refuse closes the listener, so dials get "connection refused", and
//     resets every open connection, as a stopped server would. Leaving Refuse
//     listens again on the same port.
//
// Finer faults act on one direction, or on some connections only (see
// hold.go): SetHold holds one direction of the connections Which selects (a
// one-way blackhole), ResetOpen resets the open ones once, and SetDuplicate
// sends every request to the upstream a second time, as a client's retry
// would. SetTag marks the connections whose client sent a given marker
// (a Redis client's pub/sub connection, say), so that they can be selected.
//
// Latency (fixed plus uniform jitter, per direction) applies in every mode
// that forwards. Delivery order within a connection is always preserved.
package faultproxy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Mode is the fault a Proxy injects.
type Mode int

// The modes; the zero Mode is Pass.
const (
	Pass Mode = iota
	Blackhole
	Reset
	Refuse
)

func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Blackhole:
		return "blackhole"
	case Reset:
		return "reset"
	case Refuse:
		return "refuse"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Direction names one half of a proxied connection.
type Direction int

const (
	// Upstream is the client-to-server direction (requests).
	Upstream Direction = iota
	// Downstream is the server-to-client direction (replies).
	Downstream
)

// Latency is a delay added to each chunk of bytes in one direction: Fixed
// plus a uniform random value in [-Jitter, +Jitter], never below zero.
type Latency struct {
	Fixed, Jitter time.Duration
}

func (l Latency) sample() time.Duration {
	d := l.Fixed
	if l.Jitter > 0 {
		d += time.Duration(rand.Int64N(int64(2*l.Jitter)+1)) - l.Jitter
	}
	return max(d, 0)
}

// Proxy is a fault-injecting TCP proxy. Its methods are safe for concurrent
// use. The zero value is not usable; call Start.
type Proxy struct {
	upstream string
	addr     string // the listening address, kept across Refuse

	mu      sync.Mutex
	ln      net.Listener // nil while refusing or closed
	mode    Mode
	lat     [2]Latency
	changed chan struct{} // closed and replaced at every change
	conns   map[*link]struct{}
	held    [3][2]bool // by Which, then Direction: see SetHold
	tag     []byte     // lower case; see SetTag
	dup     bool       // see SetDuplicate
	closed  bool
	wg      sync.WaitGroup
}

// Start listens on 127.0.0.1 on a free port and forwards to upstream, in mode
// Pass with no latency. Close stops it.
func Start(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{upstream: upstream, addr: ln.Addr().String(), changed: make(chan struct{}), conns: map[*link]struct{}{}}
	p.serve(ln)
	return p, nil
}

// Addr is the address clients dial; it stays the same for the Proxy's life.
func (p *Proxy) Addr() string { return p.addr }

// Mode returns the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// SetMode switches to m. Switching to Reset or Refuse resets every open
// connection before it returns; switching to Refuse also closes the listener
// (dials are refused from then on). Leaving Refuse listens again on Addr and
// returns an error if that port was taken meanwhile (the mode then stays
// Refuse). Bytes held by Blackhole are delivered once the mode forwards again.
// SetMode on a closed Proxy returns net.ErrClosed.
func (p *Proxy) SetMode(m Mode) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return net.ErrClosed
	}
	if p.mode == Refuse && m != Refuse {
		ln, err := net.Listen("tcp", p.addr)
		if err != nil {
			return fmt.Errorf("faultproxy: listen again on %s: %w", p.addr, err)
		}
		p.serve(ln)
	}
	if m == Refuse && p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	if m == Reset || m == Refuse {
		for l := range p.conns {
			l.reset()
		}
	}
	p.mode = m
	p.notifyLocked()
	return nil
}

// SetLatency sets the delay added to each chunk in direction d, from now on.
func (p *Proxy) SetLatency(d Direction, l Latency) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lat[d] = l
	p.notifyLocked()
}

// Conns returns the number of open proxied connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops listening, closes every connection (held bytes are dropped),
// and returns once every goroutine of the Proxy has ended.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for l := range p.conns {
		l.close()
	}
	p.notifyLocked()
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

func (p *Proxy) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// state returns what a forwarder of link l needs: whether it may write now,
// the delay of direction d, and a channel closed at the next change.
func (p *Proxy) state(l *link, d Direction) (forward bool, lat Latency, changed <-chan struct{}) {
	w := Untagged
	if l.tagged.Load() {
		w = Tagged
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode == Pass && !p.held[All][d] && !p.held[w][d], p.lat[d], p.changed
}

// serve runs the accept loop of ln; p.mu is held or p is not yet shared.
func (p *Proxy) serve(ln net.Listener) {
	p.ln = ln
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue
				}
				return
			}
			p.accept(c)
		}
	}()
}
