// Package adaptive makes a semaphore's fleet-wide limit follow the
// resource it protects. A static limit is a guess: too low wastes the
// database, too high lets it drown when it slows down. Adaptive limiters
// (Netflix concurrency-limits, Envoy's adaptive concurrency, failsafe-go)
// adapt per process, so P processes allow P times what each one does. A
// Limiter adapts the one limit the fleet shares instead, with no server
// beyond the semaphore's own store.
//
//	sem := redissem.New(client, "reports-db", 8)
//	lim, err := adaptive.New(sem, redisstore.New(client, "reports-db"))
//	if err != nil {
//		return err
//	}
//	defer lim.Close()
//	db := sqlmw.OpenDB(connector, lim) // each query is a sample
//
// # Samples
//
// A Limiter is a core.Semaphore. Each of its permits is a sample: its
// latency is the time from grant to Release, or the one given with
// ContextWithSample; its outcome is Success unless the ctx given to
// Release says otherwise (ContextWithOutcome). sqlmw, httpmw, grpcmw and
// echomw release with the outcome of each query or request, so they need
// nothing more than the Limiter in place of the semaphore (wrap it with
// admit.Global for the request adapters); any other semaphore ignores the
// outcome. Record adds a sample that no permit carries.
//
// # Windows and who computes them
//
// Time is cut into windows (WithWindow, 1s), numbered by the store's clock
// (Redis TIME for redisstore). At the end of each window, each process
// sends its samples of the window to the Store in one round trip, however
// many requests it served: the count, the sum of latencies, the failures
// and the timeouts. A sample is counted once per (process, window). In the
// same round trip the store elects the process that computes the window
// before (now complete): the first to sync after it, by SET NX semantics.
// There is no lease and no leader: if that process dies, the first
// process of the next window computes the next one, from the state the
// store holds, so the limit carries on from where it was. The elected
// process computes the limit, sets it with the semaphore's SetLimit, and
// stores the controller's state. If the store is unreachable, samples of
// that window are dropped and the limit stays where it was; the
// semaphore's own failure policy applies to Acquire as before.
//
// Stores: MemStore, for a core.Local (one process); redisstore, for every
// Redis semaphore (New, NewLeased, NewQuorum: the store uses one Redis)
// and for a Consul semaphore (core/consul) whose processes can reach a
// Redis: the windows are then in Redis, the limit in Consul. New refuses a
// MemStore with any semaphore but a core.Local, since each process would
// then compute the shared limit from its own samples alone. A keyed
// semaphore needs a Limiter per key.
//
// # The controller
//
// A gradient on latency: each window's mean latency is compared with a
// long-window baseline. Every parameter is an option whose documentation
// states its default; in order of evaluation, for window w:
//
//   - Idle: fewer than WithMinSamples (10) samples fleet-wide: nothing
//     changes.
//   - Settling: w began before the limit last changed: it would measure
//     the old limit, so nothing changes. A change is thus judged on a full
//     window, one decision in two windows at most.
//   - Errors and timeouts: if more than WithErrorRate (20 %) of the
//     samples failed or timed out, the limit is multiplied by WithBackoff
//     (0.8). Below that, failures are taken for the workload's own
//     (conflicts, bad input) and the latency decides.
//   - Baseline: the first window measured sets it. A lower latency moves
//     it half-way down at once (lower latency is evidence); a higher one
//     moves it up by window/WithBaselineWindow (1s/1min) of the way to
//     the baseline at which this latency would be the limit's
//     equilibrium (latency / t, with t below), so that it drifts only
//     when the resource itself changed.
//   - Slow start (WithSlowStart, from the lower bound): with no state
//     stored, the first decision sets the limit to the slow start's, so
//     the baseline is measured unloaded; then the limit doubles each
//     decision while the latency stays within the hysteresis band of the
//     baseline (1 + h, below: the resource has room, and queues nothing
//     yet); the first window that does not ends the slow start. This
//     happens once per fleet (per state: see redisstore's state TTL), not
//     periodically: the controller never probes by pinning the limit low,
//     which would stall every process at once. Monitor-only mode has no
//     slow start. WithBaseline gives the baseline instead of measuring it.
//   - Gradient: with latency/baseline = r and the concurrency in force
//     c, the resource serves c/r at its unloaded latency (Little's law).
//     The limit asked for is WithTolerance t (1.5) times that: t·c/r. A
//     permit's time outside the resource (the client's work, round trips,
//     the hand-off) needs no queue of its own: it lowers the concurrency
//     inside the resource, so its latency, and the gradient raises the
//     limit until the resource holds t times its parallelism again. When
//     the limit asked for is
//     more than WithHysteresis h (0.2) away from the limit, the limit
//     moves toward it by at most WithMaxStep (25 %) per decision;
//     within that band it holds. The latency compared is the window's
//     averaged with the windows before it under the same limit (each
//     older one half as much), so one noisy window alone moves nothing.
//     A jump is the exception: when the window's latency alone makes the
//     gradient ask for more than one step less than the latency measured
//     before did (another load came, the resource slowed down), that
//     window is taken alone and the limit falls by up to WithMaxDecrease
//     (50 %) at once, as Gradient2's and Envoy's gradients allow; a queue
//     kept for the load of before would cost every caller its latency
//     until the next decisions.
//     An increase is refused while the fleet used less than half the
//     limit (the mean concurrency, by Little's law, is the sum of
//     latencies over the window), since more would prove nothing.
//   - A slower resource: if a decrease lowered the concurrency by 20 % or
//     more and the latency did not fall, the latency is the resource's
//     own (or another load's), not this fleet's queue: the baseline rises
//     to the one at which this latency is the limit's equilibrium, and the
//     limit holds, instead of falling to the lower bound, and without
//     climbing back against the other load. (It cannot tell the two
//     apart: a resource that only got slower is then held where the cut
//     left it, below t times its parallelism, until the state expires.)
//   - Bounds: the limit stays within WithBounds ([1, 1000]) and moves by
//     whole permits.
//
// So on a resource that runs P queries at once and queues the rest, the
// limit settles near t·P (3 on 2 cores), where the mean latency is t ×
// the unloaded one: past the point where more concurrency adds
// throughput, with t − 1 of P queued to keep every server busy, before
// the point where it only adds queueing.
//
// # Monitor-only
//
// WithMonitorOnly computes and reports the limit without setting it, to
// size a limit before enforcing one. The latencies are then measured under
// the limit in force, not the recommended one, so the controller cannot
// test its recommendation: it has no slow start, its baseline does not
// drift up, and it puts the measured concurrency (not the recommendation)
// in the gradient's formula, which gives the limit the adaptive
// controller would settle at if the latency grows in proportion to the
// queue (Little's law); the recommendation moves toward it by at most one
// step per decision, one decision per window. Errors and timeouts above
// WithErrorRate cap it at WithBackoff times the concurrency in force,
// instead of lowering it window after window. Its baseline is the lowest
// latency seen, so give WithBaseline (the resource's latency alone, such
// as a query run by itself) unless the load is sometimes light; and a
// resource that degrades under load (wasted work, thrashing) makes the
// recommendation made from an overloaded limit too low. Read it with
// Recommended, the Observer or promsem.
//
// # Metrics
//
// An Observer (WithObserver) receives one EventState per window synced
// (the limit, baseline and latency as stored), one EventDecision per
// window this process computed (with its Reason), and EventError for store
// and semaphore failures. promsem.NewAdaptive exports them to Prometheus.
package adaptive
