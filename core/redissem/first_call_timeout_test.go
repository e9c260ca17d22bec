package redissem_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

// silentServer listens on loopback, accepts connections and never answers.
// stop closes the listener and every connection it accepted.
func silentServer(t *testing.T) (addr string, stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ok(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return l.Addr().String(), func() {
		_ = l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	}
}

// A backend's first TryAcquire or Acquire checks the user's rights before
// its script; against a server that refuses connections or never answers,
// the call still fails with ErrUnavailable within one operation timeout,
// not one for the check and another for the script (nor the client's 5 s
// DialTimeout when the client does not honour ctx deadlines). The
// caller's ctx has no deadline: only the operation timeout can end the
// calls.
func TestFirstCallWithinOperationTimeout(t *testing.T) {
	const opTimeout = 300 * time.Millisecond
	for _, server := range []string{"refused", "silent"} {
		for _, honoured := range []bool{false, true} {
			for _, op := range []string{"TryAcquire", "Acquire"} {
				name := server + "/" + op
				if honoured {
					name += "/ContextTimeoutEnabled"
				}
				t.Run(name, func(t *testing.T) {
					addr, stop := closedPort(t), func() {}
					if server == "silent" {
						addr, stop = silentServer(t)
					}
					c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: honoured})
					defer c.Close()
					s := redissem.New(c, "first", 1, redissem.WithOperationTimeout(opTimeout))
					defer s.Close()
					defer stop() // before Close, which waits for a pending subscription
					call := s.TryAcquire
					if op == "Acquire" {
						call = s.Acquire
					}
					start := time.Now()
					p, err := call(context.Background())
					took := time.Since(start)
					t.Logf("returned after %v: %v", took, err)
					if p != nil {
						t.Fatal("granted by a server that never answered")
					}
					if !errors.Is(err, core.ErrUnavailable) {
						t.Errorf("err = %v, want ErrUnavailable", err)
					}
					if took > opTimeout+slack {
						t.Errorf("returned after %v, want within the operation timeout %v (+%v slack)", took, opTimeout, slack)
					}
				})
			}
		}
	}
}
