package redissem_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// closedPort returns a loopback address on which nothing listens: a
// connection to it is refused.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// A Redis backend pointed at a closed port fails with ErrUnavailable that
// wraps the refused dial, not with the end of the operation timeout:
// go-redis retries the dial in the background past that timeout and then
// answers with its ctx's error, which used to be all the caller saw
// ("context deadline exceeded").
func TestRefusedConnectionNamesCause(t *testing.T) {
	addr := closedPort(t)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	s := redissem.New(c, "refused", 1, redissem.WithOperationTimeout(300*time.Millisecond))
	defer s.Close()
	// Leased mode: an Acquire takes the failure policy once the outage
	// grace has passed with every beat failing.
	leased := redissem.NewLeased(c, "refused-leased", 1, redissem.WithOperationTimeout(300*time.Millisecond),
		redissem.WithOutageGrace(300*time.Millisecond))
	defer leased.Close()
	// The caller's deadline is far beyond the operation timeout: only the
	// latter can end these calls.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, op := range []struct {
		name string
		call func() error
	}{
		{"TryAcquire", func() error { _, err := s.TryAcquire(ctx); return err }},
		{"Acquire", func() error { _, err := s.Acquire(ctx); return err }},
		{"Stats", func() error { _, err := s.Stats(ctx); return err }},
		{"leased Acquire", func() error { _, err := leased.Acquire(ctx); return err }},
	} {
		wantRefused(t, op.name, op.call())
	}
}

// On Cluster, the node clients that the ClusterClient creates after
// New are watched: with the master of the semaphore's slot killed, a
// call names the refused dial to that master.
func TestRefusedConnectionNamesCauseCluster(t *testing.T) {
	set := servertest.StartCluster(t, 3, 0)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: set.Addrs})
	defer c.Close()
	s := redissem.New(c, "refused", 1, redissem.WithOperationTimeout(300*time.Millisecond))
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := s.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	master, err := c.MasterForKey(ctx, "distsem:{refused}:m")
	if err != nil {
		t.Fatal(err)
	}
	set.Kill(master.Options().Addr)
	_, err = s.TryAcquire(ctx)
	wantRefused(t, "TryAcquire", err)
}

func wantRefused(t *testing.T, op string, err error) {
	t.Helper()
	var oe *net.OpError
	switch {
	case !errors.Is(err, core.ErrUnavailable):
		t.Errorf("%s: err = %v, want ErrUnavailable", op, err)
	case !errors.As(err, &oe) || oe.Op != "dial" || !errors.Is(err, syscall.ECONNREFUSED):
		t.Errorf("%s: err = %v, want it to wrap the refused dial", op, err)
	case errors.Is(err, context.DeadlineExceeded):
		t.Errorf("%s: err = %v matches DeadlineExceeded, but no deadline of the caller passed", op, err)
	case !strings.Contains(err.Error(), "connection refused"):
		t.Errorf("%s: err = %q, want the text to say the connection was refused", op, err)
	}
}
