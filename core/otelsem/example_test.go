package otelsem_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/otelsem"
)

// The Observer goes to the semaphore; the wait then shows in the trace of
// every caller whose ctx holds a span. Here an in-memory recorder stands
// for an exporter; in a service, leave out WithTracerProvider and the
// global provider set with otel.SetTracerProvider is used.
func Example() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))

	obs := otelsem.New(otelsem.WithTracerProvider(tp), otelsem.WithKeys("orders-db"))
	sem := core.NewLocal(4, core.WithName("orders-db"), core.WithObserver(obs))
	defer sem.Close()

	ctx, request := tp.Tracer("app").Start(context.Background(), "GET /orders")
	p, err := sem.Acquire(ctx, core.WithWeight(2))
	if err != nil {
		panic(err)
	}
	p.Release(ctx)
	request.End()

	for _, s := range spans.Ended() {
		fmt.Println(s.Name(), "child of", s.Parent().SpanID() == request.SpanContext().SpanID())
		for _, kv := range s.Attributes() {
			fmt.Printf("  %s=%s\n", kv.Key, kv.Value.String())
		}
	}
	// Output:
	// distsem.wait child of true
	//   distsem.semaphore=orders-db
	//   distsem.weight=2
	//   distsem.outcome=acquired
	//   distsem.wait_seconds=0
	// GET /orders child of false
}
