package consul_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/consul"
)

// proxy forwards TCP connections to the agent until cut.
type proxy struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ok(t, err)
	p := &proxy{l: l}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(u, c); _ = u.Close() }()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, u); _ = c.Close() }()
		}
	}()
	t.Cleanup(p.cut)
	return p
}

// cut stops accepting and closes every connection: the agent is gone.
func (p *proxy) cut() {
	_ = p.l.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// When the session cannot be renewed for longer than its TTL (the agent is
// unreachable), the permit is Lost, its Release fails with ErrUnavailable,
// Acquire follows the failure policy, and WithOnError saw the failures.
func TestAgentUnreachableMarksLost(t *testing.T) {
	ctx := background()
	newClient(t) // skips or fails without an agent
	px := newProxy(t, agentAddr)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := api.NewClient(&api.Config{Address: px.l.Addr().String(), HttpClient: &http.Client{Transport: tr, Timeout: 5 * time.Second}})
	ok(t, err)
	var mu sync.Mutex
	var seen []error
	s := consul.New(c, "outage", 1, core.WithKeyPrefix(uniquePrefix()), core.WithDefaultLeaseTTL(time.Second),
		core.WithOnError(func(err error) { mu.Lock(); seen = append(seen, err); mu.Unlock() }))
	t.Cleanup(func() { _ = s.Close() })
	p, err := s.Acquire(ctx)
	ok(t, err)
	px.cut()
	select {
	case <-p.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("Lost not closed while the agent was unreachable")
	}
	if err := p.Release(ctx); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Release: %v, want ErrUnavailable", err)
	}
	if _, err := s.Acquire(ctx); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Acquire: %v, want ErrUnavailable (fail closed)", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || !errors.Is(seen[0], core.ErrUnavailable) {
		t.Fatalf("WithOnError saw %v, want ErrUnavailable errors", seen)
	}
}
