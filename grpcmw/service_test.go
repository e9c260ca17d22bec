package grpcmw_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// A tiny hand-registered service with one method of each kind; its
// messages are protobuf well-known types, so no generated code is needed.
const (
	mUnary   = "/distsem.test.Test/Unary"
	mServer  = "/distsem.test.Test/ServerStream"
	mClient  = "/distsem.test.Test/ClientStream"
	mBidi    = "/distsem.test.Test/Bidi"
	svcName  = "distsem.test.Test"
	nServerN = 3 // messages ServerStream sends
)

var (
	descServer = &grpc.StreamDesc{StreamName: "ServerStream", ServerStreams: true}
	descClient = &grpc.StreamDesc{StreamName: "ClientStream", ClientStreams: true}
	descBidi   = &grpc.StreamDesc{StreamName: "Bidi", ServerStreams: true, ClientStreams: true}
)

// testServer's handlers announce themselves on entered and, when gated,
// wait for open to close.
type testServer struct {
	entered chan string
	open    chan struct{}
}

func newTestServer() *testServer {
	return &testServer{entered: make(chan string, 100), open: make(chan struct{})}
}

func (s *testServer) enter(ctx context.Context, m string, gated bool) error {
	s.entered <- m
	if !gated {
		return nil
	}
	select {
	case <-s.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *testServer) desc() *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: svcName,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Unary", Handler: func(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.Int64Value)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, req any) (any, error) {
				if err := s.enter(ctx, mUnary, req.(*wrapperspb.Int64Value).Value == 1); err != nil {
					return nil, err
				}
				if req.(*wrapperspb.Int64Value).Value == 2 {
					panic("unary handler panics")
				}
				return req, nil
			}
			if icpt == nil {
				return h(ctx, in)
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{Server: s, FullMethod: mUnary}, h)
		}}},
		Streams: []grpc.StreamDesc{
			{StreamName: "ServerStream", ServerStreams: true, Handler: func(_ any, ss grpc.ServerStream) error {
				in := new(wrapperspb.Int64Value)
				if err := ss.RecvMsg(in); err != nil {
					return err
				}
				if err := s.enter(ss.Context(), mServer, in.Value == 1); err != nil {
					return err
				}
				for i := range nServerN {
					if err := ss.SendMsg(wrapperspb.Int64(int64(i))); err != nil {
						return err
					}
				}
				return nil
			}},
			{StreamName: "ClientStream", ClientStreams: true, Handler: func(_ any, ss grpc.ServerStream) error {
				s.enter(ss.Context(), mClient, false)
				var sum int64
				for {
					in := new(wrapperspb.Int64Value)
					err := ss.RecvMsg(in)
					if errors.Is(err, io.EOF) {
						return ss.SendMsg(wrapperspb.Int64(sum))
					}
					if err != nil {
						return err
					}
					sum += in.Value
				}
			}},
			{StreamName: "Bidi", ServerStreams: true, ClientStreams: true, Handler: func(_ any, ss grpc.ServerStream) error {
				s.enter(ss.Context(), mBidi, false)
				for {
					in := new(wrapperspb.Int64Value)
					err := ss.RecvMsg(in)
					if errors.Is(err, io.EOF) {
						return nil
					}
					if err != nil {
						return err
					}
					if err := ss.SendMsg(in); err != nil {
						return err
					}
				}
			}},
		},
	}
}

// serve starts a gRPC server with opts on a loopback port and returns a
// client connection to it with dopts; both stop at the end of the test.
func serve(t *testing.T, s *testServer, opts []grpc.ServerOption, dopts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(s.desc(), s)
	go srv.Serve(ln)
	dopts = append(dopts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	cc, err := grpc.NewClient(ln.Addr().String(), dopts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		srv.Stop()
	})
	return cc
}

func unary(ctx context.Context, cc *grpc.ClientConn, v int64) error {
	return cc.Invoke(ctx, mUnary, wrapperspb.Int64(v), new(wrapperspb.Int64Value))
}
