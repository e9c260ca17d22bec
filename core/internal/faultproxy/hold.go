package faultproxy

import (
	"bytes"
	"net"
	"time"
)

// Which selects connections by their tag (see SetTag).
type Which int

const (
	// All is every connection.
	All Which = iota
	// Tagged is the connections whose client sent the tag.
	Tagged
	// Untagged is the others.
	Untagged
)

// SetTag tags, from now on, every connection whose client sends bytes that
// contain marker (ASCII case ignored) within one read. A tag is never
// removed. An empty marker tags nothing more. For a Redis client,
// "\r\nsubscribe\r\n" tags its pub/sub connections.
func (p *Proxy) SetTag(marker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tag = bytes.ToLower([]byte(marker))
}

// mark tags l if b, sent by its client, contains the tag.
func (p *Proxy) mark(l *link, b []byte) {
	if l.tagged.Load() {
		return
	}
	p.mu.Lock()
	tag := p.tag
	p.mu.Unlock()
	if len(tag) > 0 && bytes.Contains(bytes.ToLower(b), tag) {
		l.tagged.Store(true)
	}
}

// SetHold holds (on) or lets through again (off) the bytes of direction d
// on the connections w selects, whatever the mode: a one-way blackhole.
// Held bytes are kept, and delivered in order once no hold and no Blackhole
// applies to them. Holds for All, Tagged and Untagged are separate: a
// connection is held while any of those that select it is on.
func (p *Proxy) SetHold(w Which, d Direction, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held[w][d] = on
	p.notifyLocked()
}

// ResetOpen resets (TCP RST) the open connections w selects, once, as a
// network failure would; later connections are not affected. Bytes they
// held are lost.
func (p *Proxy) ResetOpen(w Which) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.conns {
		if w == All || l.tagged.Load() == (w == Tagged) {
			l.reset()
		}
	}
}

// SetDuplicate turns duplicate delivery on or off. While on, every chunk a
// client sends is, once forwarded, sent again on a new connection to the
// upstream, whose reply is discarded; the connection's next chunk waits for
// the first byte of that reply (at most 5s). A server thus runs each request
// twice, as after a client's retry of a request that did arrive.
func (p *Proxy) SetDuplicate(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dup = on
}

// duplicating reports whether duplicate delivery is on.
func (p *Proxy) duplicating() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dup
}

// duplicate sends b again on a side connection.
func (p *Proxy) duplicate(b []byte) {
	side, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		return
	}
	defer side.Close()
	_ = side.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := side.Write(b); err != nil {
		return
	}
	var one [1]byte
	_, _ = side.Read(one[:]) // the copy has run once its reply starts
}
