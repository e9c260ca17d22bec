package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/distsem/distsem/grpcmw"
)

// grpcMethod is the one method of the gateway's gRPC service. The service
// is registered by hand, with protobuf well-known types as messages, so the
// example needs no generated code.
const grpcMethod = "/gateway.Work/Do"

// workService is the gRPC service gateway.Work. Do refuses an ms outside
// 0 to maxMS with InvalidArgument, before the interceptor takes a permit.
var workService = grpc.ServiceDesc{
	ServiceName: "gateway.Work",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Do", Handler: func(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.Int64Value)
		if err := dec(in); err != nil {
			return nil, err
		}
		if err := checkMS(in.Value); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		do := func(ctx context.Context, req any) (any, error) {
			ms := req.(*wrapperspb.Int64Value).Value
			hold(ctx, ms)
			return wrapperspb.String(fmt.Sprintf("ok %dms", ms)), nil
		}
		if icpt == nil {
			return do(ctx, in)
		}
		return icpt(ctx, in, &grpc.UnaryServerInfo{FullMethod: grpcMethod}, do)
	}}},
}

func (g *gateway) serveGRPC(ctx context.Context) error {
	ln, err := net.Listen("tcp", g.cfg.addr)
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(grpcmw.UnaryServerInterceptor(g.sem,
		grpcmw.WithMaxWait(g.cfg.maxWait),
		grpcmw.WithMaxWaiting(g.cfg.maxWaiting),
		grpcmw.WithObserver(g.col))))
	srv.RegisterService(&workService, nil)
	log.Printf("grpc gateway on %s (%s limit %d, max wait %v)", ln.Addr(), grpcMethod, g.cfg.limit, g.cfg.maxWait)
	stop := context.AfterFunc(ctx, srv.GracefulStop)
	defer stop()
	return srv.Serve(ln)
}

// grpcLoad sends -n calls of -ms milliseconds, -c at a time, to the gRPC
// gateway at -addr and prints how many ended with each status code. It
// fails when no call succeeded.
func grpcLoad(ctx context.Context, cfg config, stdout io.Writer) error {
	cc, err := grpc.NewClient(cfg.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	var (
		mu     sync.Mutex
		counts = map[string]int{}
		first  error // of the first call that failed
		wg     sync.WaitGroup
		next   = make(chan struct{})
	)
	start := time.Now()
	for range cfg.c {
		wg.Go(func() {
			for range next {
				out := new(wrapperspb.StringValue)
				err := cc.Invoke(ctx, grpcMethod, wrapperspb.Int64(cfg.ms), out)
				mu.Lock()
				counts[status.Code(err).String()]++
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	for range cfg.n {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	names := make([]string, 0, len(counts))
	for c := range counts {
		names = append(names, c)
	}
	sort.Strings(names)
	fmt.Fprintf(stdout, "%d calls of %dms, %d at a time, in %v:\n", cfg.n, cfg.ms, cfg.c, time.Since(start).Round(time.Millisecond))
	for _, c := range names {
		fmt.Fprintf(stdout, "  %-18s %d\n", c, counts[c])
	}
	if counts[codes.OK.String()] == 0 {
		return fmt.Errorf("all %d calls failed; the first: %v", cfg.n, status.Convert(first).Message())
	}
	return nil
}
