package grpcmw_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/grpcmw"
	"github.com/distsem/distsem/internal/servertest"
)

// Over a real connection: each way a client stream can end releases its
// permit exactly when grpc-go says the stream is over.
func TestStreamClientRelease(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	rel, released := events(admit.EventReleased)
	s := newTestServer()
	cc := serve(t, s, nil, grpc.WithStreamInterceptor(grpcmw.StreamClientInterceptor(sem, grpcmw.WithObserver(rel))))
	ctx := t.Context()

	t.Run("server streaming, read to io.EOF", func(t *testing.T) {
		st, err := cc.NewStream(ctx, descServer, mServer)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SendMsg(wrapperspb.Int64(0)); err != nil {
			t.Fatal(err)
		}
		st.CloseSend()
		for range nServerN {
			if err := st.RecvMsg(new(wrapperspb.Int64Value)); err != nil {
				t.Fatal(err)
			}
			if got := servertest.InUse(t, sem, mServer); got != 1 {
				t.Fatalf("in use mid-stream = %d, want 1", got)
			}
		}
		if err := st.RecvMsg(new(wrapperspb.Int64Value)); err != io.EOF {
			t.Fatalf("end: %v", err)
		}
		if got := servertest.InUse(t, sem, mServer); got != 0 {
			t.Fatalf("in use after io.EOF = %d, want 0", got)
		}
		<-released
	})

	t.Run("client streaming, single response", func(t *testing.T) {
		st, err := cc.NewStream(ctx, descClient, mClient)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if err := st.SendMsg(wrapperspb.Int64(int64(i))); err != nil {
				t.Fatal(err)
			}
		}
		// Held while the stream is open: a second stream is refused.
		if _, err := cc.NewStream(ctx, descClient, mClient); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("second stream: %v, want ResourceExhausted", err)
		}
		st.CloseSend()
		out := new(wrapperspb.Int64Value)
		if err := st.RecvMsg(out); err != nil || out.Value != 6 {
			t.Fatalf("response %v, %v", out, err)
		}
		// The single response ends a call without server streaming.
		if got := servertest.InUse(t, sem, mClient); got != 0 {
			t.Fatalf("in use after the response = %d, want 0", got)
		}
		<-released
	})

	t.Run("bidi abandoned midway", func(t *testing.T) {
		sctx, cancel := context.WithCancel(ctx)
		st, err := cc.NewStream(sctx, descBidi, mBidi)
		if err != nil {
			t.Fatal(err)
		}
		st.SendMsg(wrapperspb.Int64(1))
		if err := st.RecvMsg(new(wrapperspb.Int64Value)); err != nil {
			t.Fatal(err)
		}
		cancel() // never read to the end
		<-released
		if got := servertest.InUse(t, sem, mBidi); got != 0 {
			t.Fatalf("in use after cancel = %d, want 0", got)
		}
	})
}

// fakeStream is a ClientStream whose calls return preset errors.
type fakeStream struct {
	grpc.ClientStream
	send, recv, header error
}

func (f *fakeStream) SendMsg(any) error            { return f.send }
func (f *fakeStream) RecvMsg(any) error            { return f.recv }
func (f *fakeStream) Header() (metadata.MD, error) { return nil, f.header }
func (f *fakeStream) CloseSend() error             { return nil }
func (f *fakeStream) Context() context.Context     { return context.Background() }
func (f *fakeStream) Trailer() metadata.MD         { return nil }

func TestStreamClientRules(t *testing.T) {
	broken := status.Error(codes.Internal, "broken")
	for _, tc := range []struct {
		name         string
		desc         *grpc.StreamDesc
		fake         fakeStream
		call         func(grpc.ClientStream) error
		wantReleased bool
	}{
		{"SendMsg io.EOF keeps it", descBidi, fakeStream{send: io.EOF}, func(s grpc.ClientStream) error { return s.SendMsg(nil) }, false},
		{"SendMsg error releases", descBidi, fakeStream{send: broken}, func(s grpc.ClientStream) error { return s.SendMsg(nil) }, true},
		{"Header error releases", descBidi, fakeStream{header: broken}, func(s grpc.ClientStream) error { _, err := s.Header(); return err }, true},
		{"Header io.EOF keeps it", descBidi, fakeStream{header: io.EOF}, func(s grpc.ClientStream) error { _, err := s.Header(); return err }, false},
		{"RecvMsg message keeps it (server streams)", descBidi, fakeStream{}, func(s grpc.ClientStream) error { return s.RecvMsg(nil) }, false},
		{"RecvMsg message releases (no server streams)", descClient, fakeStream{}, func(s grpc.ClientStream) error { return s.RecvMsg(nil) }, true},
		{"RecvMsg io.EOF releases", descBidi, fakeStream{recv: io.EOF}, func(s grpc.ClientStream) error { return s.RecvMsg(nil) }, true},
		{"RecvMsg error releases", descBidi, fakeStream{recv: broken}, func(s grpc.ClientStream) error { return s.RecvMsg(nil) }, true},
		{"CloseSend keeps it", descBidi, fakeStream{}, func(s grpc.ClientStream) error { return s.CloseSend() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sem := core.NewLocalKeyed(1)
			icpt := grpcmw.StreamClientInterceptor(sem)
			fake := tc.fake
			st, err := icpt(t.Context(), tc.desc, nil, "/m", func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
				return &fake, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			tc.call(st)
			tc.call(st) // a second end must not release twice
			if got, want := servertest.InUse(t, sem, "/m"), map[bool]int64{true: 0, false: 1}[tc.wantReleased]; got != want {
				t.Fatalf("in use = %d, want %d", got, want)
			}
		})
	}
}

func TestStreamClientStreamerError(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	icpt := grpcmw.StreamClientInterceptor(sem)
	dial := errors.New("no route")
	_, err := icpt(t.Context(), descBidi, nil, "/m", func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
		return nil, dial
	})
	if err != dial {
		t.Fatalf("err = %v, want the streamer's error unchanged", err)
	}
	if got := servertest.InUse(t, sem, "/m"); got != 0 {
		t.Fatalf("in use = %d, want 0", got)
	}
	// Rejected before the streamer runs.
	held, _ := sem.Acquire(t.Context(), "/m")
	defer held.Release(t.Context())
	_, err = icpt(t.Context(), descBidi, nil, "/m", func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
		t.Fatal("streamer called")
		return nil, nil
	})
	wantCode(t, err, codes.ResourceExhausted)
}
