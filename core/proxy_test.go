package core_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// faultProxy is a TCP proxy between a test's client and a real Redis that
// can hold the bytes of either direction (a blackhole, healed later, when
// the held bytes are delivered in order) or delay them.
type faultProxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	gate     [2]chan struct{} // per direction (0 up, 1 down): closed = open
	delay    [2]time.Duration
	conns    []net.Conn
	pubsub   map[net.Conn]bool // client conns that subscribed
	dup      bool              // deliver every client chunk twice: the copy on a side connection
	psGate   chan struct{}     // non-nil: pub/sub messages held until closed
	accepted int
	onAccept chan struct{}
	wg       sync.WaitGroup
}

const (
	up   = 0 // client to server
	down = 1 // server to client
)

// newFaultProxy listens on a free port of this helper's range.
func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	var ln net.Listener
	var err error
	for port := 21100; port < 21500; port++ {
		if ln, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			break
		}
	}
	if ln == nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target, onAccept: make(chan struct{}, 1000), pubsub: map[net.Conn]bool{}}
	for d := range p.gate {
		p.gate[d] = make(chan struct{})
		close(p.gate[d])
	}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

func (p *faultProxy) client(t *testing.T, o *redis.Options) *redis.Client {
	if o == nil {
		o = &redis.Options{}
	}
	o.Addr = p.addr()
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.accepted++
		p.mu.Unlock()
		p.onAccept <- struct{}{}
		p.wg.Add(2)
		go p.pipe(s, c, up)
		go p.pipe(c, s, down)
	}
}

func (p *faultProxy) pipe(dst, src net.Conn, dir int) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			at := time.Now()
			p.mu.Lock()
			gate, delay := p.gate[dir], p.delay[dir]
			ps := p.psGate
			isPS := dir == down && p.pubsub[dst]
			p.mu.Unlock()
			<-gate
			if isPS && ps != nil {
				<-ps
			}
			if d := time.Until(at.Add(delay)); d > 0 {
				time.Sleep(d) // the injected latency itself
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if dir == up {
				p.duplicate(buf[:n])
				if bytes.Contains(bytes.ToLower(buf[:n]), []byte("subscribe")) {
					p.mu.Lock()
					p.pubsub[src] = true
					p.mu.Unlock()
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

// duplicate sends b, if dup is on, to Redis again on a side connection
// whose replies are discarded: Redis runs the command twice, as after a
// client's retry.
func (p *faultProxy) duplicate(b []byte) {
	p.mu.Lock()
	on := p.dup
	p.mu.Unlock()
	if !on {
		return
	}
	side, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer side.Close()
	if _, err := side.Write(b); err != nil {
		return
	}
	var one [1]byte
	_, _ = side.Read(one[:]) // the copy has run once its reply starts
}

func (p *faultProxy) setDup(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dup = on
}

// reset closes every command connection made so far (not the pub/sub
// one), as a network failure would.
func (p *faultProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := p.conns[:0]
	for i := 0; i+1 < len(p.conns); i += 2 {
		c, s := p.conns[i], p.conns[i+1]
		if p.pubsub[c] {
			kept = append(kept, c, s)
			continue
		}
		_ = c.Close()
		_ = s.Close()
	}
	p.conns = kept
}

// hold blackholes direction dir: bytes are kept until heal.
func (p *faultProxy) hold(dir int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate[dir]:
		p.gate[dir] = make(chan struct{})
	default:
	}
}

// holdPubsub holds the messages published to the client's subscription;
// the returned func delivers them.
func (p *faultProxy) holdPubsub() (release func()) {
	ch := make(chan struct{})
	p.mu.Lock()
	p.psGate = ch
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.psGate = nil
			p.mu.Unlock()
			close(ch)
		})
	}
}

// blackhole holds both directions.
func (p *faultProxy) blackhole() { p.hold(up); p.hold(down) }

// heal delivers what was held and lets everything through again.
func (p *faultProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for d := range p.gate {
		select {
		case <-p.gate[d]:
		default:
			close(p.gate[d])
		}
	}
}

func (p *faultProxy) setDelay(dir int, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay[dir] = d
}

func (p *faultProxy) close() {
	_ = p.ln.Close()
	p.heal()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
