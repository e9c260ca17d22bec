package grpcmw_test

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/grpcmw"
)

func ExampleUnaryServerInterceptor() {
	sem := core.NewLocalKeyed(32, core.WithLimits(map[string]int64{"/shop.Cart/Checkout": 1}))
	icpt := grpcmw.UnaryServerInterceptor(sem, grpcmw.WithMaxWait(50*time.Millisecond))
	_ = grpc.NewServer(grpc.ChainUnaryInterceptor(icpt))

	// What a second concurrent Checkout sees:
	p, _ := sem.Acquire(context.Background(), "/shop.Cart/Checkout")
	defer p.Release(context.Background())
	_, err := icpt(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/shop.Cart/Checkout"},
		func(context.Context, any) (any, error) { return "ok", nil })
	fmt.Println(status.Code(err))
	// Output: ResourceExhausted
}

func ExampleStreamServerInterceptor() {
	// One limit for all streams of the server.
	sem := admit.Global(core.NewLocal(100))
	_ = grpc.NewServer(grpc.ChainStreamInterceptor(grpcmw.StreamServerInterceptor(sem)))
}

func ExampleUnaryClientInterceptor() {
	// A client-side bulkhead: at most 4 calls at once to each method of
	// the downstream service.
	icpt := grpcmw.UnaryClientInterceptor(core.NewLocalKeyed(4))
	cc, err := grpc.NewClient("127.0.0.1:50051",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(icpt))
	if err != nil {
		panic(err)
	}
	defer cc.Close()
	fmt.Println("ok")
	// Output: ok
}

func ExampleStreamClientInterceptor() {
	icpt := grpcmw.StreamClientInterceptor(core.NewLocalKeyed(4))
	cc, err := grpc.NewClient("127.0.0.1:50051",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainStreamInterceptor(icpt))
	if err != nil {
		panic(err)
	}
	defer cc.Close()
	// Each stream holds a permit until RecvMsg returns an error (io.EOF
	// included) or its context ends.
}
