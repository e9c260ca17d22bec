// Package otelsem records a distsem semaphore's waits as OpenTelemetry
// spans, and its metrics as OpenTelemetry instruments. Its Observer is a
// core.Observer: pass it to the semaphore with core.WithObserver (Local,
// Consul) or redissem.WithObserver, and every user of that
// semaphore is covered: sqlmw's queries, direct Acquire calls, and the
// HTTP, gRPC and Echo adapters alike.
//
// # Spans
//
// Each wait for a permit that ends, granted or abandoned, is a span named
// "distsem.wait", a child of the span in the ctx given to Acquire (the
// adapters and sqlmw pass the request's ctx, so it lands in the request's
// trace). It starts when Acquire began to wait and ends when the wait did;
// a permit granted at once is a span of zero length. Its attributes:
//
//	distsem.semaphore     the semaphore's name or key (bounded, see below)
//	distsem.weight        the permit's weight
//	distsem.outcome       "acquired" or "abandoned"
//	distsem.wait_seconds  the time queued, in seconds
//	error.type            why an abandoned wait ended: "deadline_exceeded",
//	                      "canceled", "unavailable", "closed" or "other"
//
// An abandoned wait's span has status Error. A TryAcquire that finds no
// permit makes no span: it did not wait. By default an Acquire whose ctx
// holds no span makes none either (see WithRootSpans).
//
// A lease lost while held (core.Permit.Lost) is a span event named
// "distsem.lease_lost" on the span of the call that acquired the permit,
// such as the request's, with distsem.semaphore and distsem.weight (and
// error.type "closed" when Close dropped it).
//
// # Metrics
//
// They mean what promsem's do. Translated to Prometheus names with
// underscores and unit suffixes, they are promsem's names
// (distsem_sem_acquire_wait_seconds, distsem_sem_in_use, …,
// distsem_sem_backend_errors_total), with the attributes below as labels
// where promsem has key, result and kind:
//
//	distsem.sem.acquire.wait    histogram, s: time queued, by distsem.semaphore and distsem.outcome
//	distsem.sem.in_use          up-down counter, {permit}: permit weight held by this process
//	distsem.sem.waiting         up-down counter, {call}: Acquire calls of this process in the queue
//	distsem.sem.lost_leases     counter, {lease}: leases lost while held
//	distsem.sem.backend_errors  counter, {error}: backend failures, by error.type
//
// The first four carry distsem.semaphore; backend_errors carries
// error.type: "timeout", "network", "server" (an error reply from Redis),
// "closed" or "other". The wait histogram counts every grant: one that did
// not queue is a sample of 0.
//
// # Bounded attributes
//
// Keys come from requests (paths, tenants, SQL comments): only the keys
// named with WithKeys (the overrides table given to core.WithLimits, or the
// semaphore's name for a plain semaphore) get a distsem.semaphore value of
// their own, in spans and metrics alike; every other key is recorded as
// "other". Values are cut to MaxLabelLen bytes.
//
// # With other observers
//
// A semaphore has one observer. To feed promsem's Collector too, combine
// them with core.Observers:
//
//	col := promsem.New(promsem.WithKeys("orders-db"))
//	obs := otelsem.New(otelsem.WithKeys("orders-db"))
//	both := core.Observers(col, obs)
//	sem := redissem.New(rdb, "orders-db", 8, redissem.WithObserver(both))
//
// This package is apart from core so that core, and the users who do not
// want OpenTelemetry, never import it.
package otelsem
