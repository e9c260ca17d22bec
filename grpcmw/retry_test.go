package grpcmw_test

import (
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/grpcmw"
)

// retryConfig is a grpc-go service config whose retry policy retries
// ResourceExhausted with a 1ms backoff: only a server pushback makes it
// wait longer.
const retryConfig = `{"methodConfig": [{"name": [{"service": "distsem.test.Test"}],
  "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
    "backoffMultiplier": 1, "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}}]}`

// attempts records when each call reached the interceptor, and how it went.
type attempts struct {
	mu       sync.Mutex
	at       []time.Time
	admitted []bool
	rejected chan struct{}
}

func (a *attempts) Observe(e admit.Event) {
	if e.Kind != admit.EventAdmitted && e.Kind != admit.EventRejected {
		return
	}
	a.mu.Lock()
	a.at = append(a.at, time.Now())
	a.admitted = append(a.admitted, e.Kind == admit.EventAdmitted)
	a.mu.Unlock()
	if e.Kind == admit.EventRejected {
		select {
		case a.rejected <- struct{}{}:
		default:
		}
	}
}

// A grpc-go client with a retry policy waits as long as the server's
// pushback says, not its own 1ms backoff, and its retry succeeds once a
// permit is free.
func TestClientRetryHonoursPushback(t *testing.T) {
	const pushback = 300 * time.Millisecond
	sem := core.NewLocalKeyed(1)
	held, err := sem.Acquire(t.Context(), mUnary)
	if err != nil {
		t.Fatal(err)
	}
	rec := &attempts{rejected: make(chan struct{}, 1)}
	s := newTestServer()
	cc := serve(t, s, []grpc.ServerOption{grpc.UnaryInterceptor(grpcmw.UnaryServerInterceptor(sem,
		grpcmw.WithRetryAfter(pushback), grpcmw.WithObserver(rec)))},
		grpc.WithDefaultServiceConfig(retryConfig))

	done := make(chan error, 1)
	go func() { done <- unary(t.Context(), cc, 0) }()
	<-rec.rejected // the first attempt found the permit held
	held.Release(t.Context())
	if err := <-done; err != nil {
		t.Fatalf("call with retries: %v", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	n := len(rec.at)
	t.Logf("%d attempts, admitted %v", n, rec.admitted)
	if n < 2 || !rec.admitted[n-1] || rec.admitted[0] {
		t.Fatalf("attempts admitted = %v, want rejections then one admission", rec.admitted)
	}
	// The machine may be slow, never fast: each retry came at least the
	// pushback after the attempt before it (the client's own backoff is 1ms).
	for i := 1; i < n; i++ {
		if gap := rec.at[i].Sub(rec.at[i-1]); gap < pushback {
			t.Errorf("attempt %d came %v after the one before, want >= %v (the pushback)", i+1, gap, pushback)
		}
	}
}

// The rejection itself carries the hint: a RetryInfo detail and the
// pushback trailer; with admit.NoRetryAfter, neither.
func TestRetryHint(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opt      time.Duration
		delay    time.Duration // 0: no RetryInfo
		pushback string
	}{
		{"default", 0, time.Second, "1000"},
		{"rounded up to ms", 1500 * time.Microsecond, 1500 * time.Microsecond, "2"},
		{"none", admit.NoRetryAfter, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sem := core.NewLocalKeyed(1)
			held, _ := sem.Acquire(t.Context(), mUnary)
			defer held.Release(t.Context())
			cc := serve(t, newTestServer(), []grpc.ServerOption{grpc.UnaryInterceptor(
				grpcmw.UnaryServerInterceptor(sem, grpcmw.WithRetryAfter(tc.opt)))})
			var trailer metadata.MD
			err := cc.Invoke(t.Context(), mUnary, wrapperspb.Int64(0), new(wrapperspb.Int64Value), grpc.Trailer(&trailer))
			wantCode(t, err, codes.ResourceExhausted)
			var delay time.Duration
			for _, d := range status.Convert(err).Details() {
				if ri, ok := d.(*errdetails.RetryInfo); ok {
					delay = ri.GetRetryDelay().AsDuration()
				}
			}
			if delay != tc.delay {
				t.Errorf("RetryInfo delay = %v, want %v", delay, tc.delay)
			}
			if got := trailer.Get(grpcmw.PushbackTrailer); tc.pushback == "" && len(got) != 0 ||
				tc.pushback != "" && (len(got) != 1 || got[0] != tc.pushback) {
				t.Errorf("pushback trailer = %q, want %q", got, tc.pushback)
			}
		})
	}
}
