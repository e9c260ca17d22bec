package faultproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// link is one proxied connection: the client side, the upstream side, and a
// forwarder per direction.
type link struct {
	client, server net.Conn
	once           sync.Once
	done           chan struct{}
	tagged         atomic.Bool // the client sent the tag (see SetTag)
}

// chunk is bytes read at one time, due for delivery at due.
type chunk struct {
	b   []byte
	due time.Time
}

// accept takes a new client connection: in Reset mode it is reset at once,
// otherwise it is dialled through to the upstream and forwarded.
func (p *Proxy) accept(c net.Conn) {
	p.mu.Lock()
	if p.closed || p.mode == Reset || p.mode == Refuse {
		p.mu.Unlock()
		rst(c)
		return
	}
	p.mu.Unlock()
	s, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		rst(c) // the upstream is down: the client sees a reset connection
		return
	}
	l := &link{client: c, server: s, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.close()
		return
	}
	p.conns[l] = struct{}{}
	p.wg.Add(4)
	p.mu.Unlock()
	up, down := make(chan chunk, 64), make(chan chunk, 64)
	go p.read(l, c, up, Upstream)
	go p.write(l, s, up, Upstream)
	go p.read(l, s, down, Downstream)
	go p.write(l, c, down, Downstream)
}

// read reads chunks from src and queues them with their due time. Latency is
// sampled here; due times never go backwards, so order is kept.
func (p *Proxy) read(l *link, src net.Conn, q chan<- chunk, d Direction) {
	defer p.wg.Done()
	defer close(q)
	var last time.Time
	for {
		buf := make([]byte, 32<<10)
		n, err := src.Read(buf)
		if n > 0 {
			if d == Upstream {
				p.mark(l, buf[:n])
			}
			_, lat, _ := p.state(l, d)
			due := time.Now().Add(lat.sample())
			if due.Before(last) {
				due = last
			}
			last = due
			select {
			case q <- chunk{buf[:n], due}:
			case <-l.done:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// write delivers queued chunks to dst once they are due and the mode
// forwards. When the queue ends (the source closed) it closes the link.
func (p *Proxy) write(l *link, dst net.Conn, q <-chan chunk, d Direction) {
	defer p.wg.Done()
	defer p.drop(l)
	for c := range q {
		for {
			forward, _, changed := p.state(l, d)
			wait := time.Until(c.due)
			if forward && wait <= 0 {
				break
			}
			var t *time.Timer
			var timer <-chan time.Time
			if forward {
				t = time.NewTimer(wait)
				timer = t.C
			}
			select {
			case <-timer:
			case <-changed:
			case <-l.done:
			}
			if t != nil {
				t.Stop()
			}
			select {
			case <-l.done:
				return
			default:
			}
		}
		// Whether to send a copy is decided before the chunk goes out, so
		// that a SetDuplicate after its reply came back does not apply to it.
		dup := d == Upstream && p.duplicating()
		if _, err := dst.Write(c.b); err != nil {
			return
		}
		if dup {
			p.duplicate(c.b)
		}
	}
}

// drop closes l and forgets it.
func (p *Proxy) drop(l *link) {
	l.close()
	p.mu.Lock()
	delete(p.conns, l)
	p.mu.Unlock()
}

// close closes both sides normally (FIN).
func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		_ = l.client.Close()
		_ = l.server.Close()
	})
}

// reset closes both sides with a TCP RST.
func (l *link) reset() {
	l.once.Do(func() {
		close(l.done)
		rst(l.client)
		rst(l.server)
	})
}

// rst closes c so that the peer sees a connection reset.
func rst(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
