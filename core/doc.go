// Package core is distsem's contract: what every semaphore of distsem
// does, whatever holds its state, and the in-process semaphore.
//
//   - Semaphore hands out *Permit values: Acquire waits in FIFO order,
//     TryAcquire never waits. A Permit is released once, has a fencing
//     token, and reports a lost lease on Lost.
//   - Local is the in-process semaphore, with the same semantics as the
//     network backends: FIFO, weights, fencing tokens, a runtime limit,
//     and cancellation that never leaks a permit.
//   - Keyed hands out one semaphore per key (a route, a tenant), with a
//     memory bound for keys that come from requests. NewLocalKeyed makes
//     one in process; the network backends have their own constructors.
//   - Reentrant and ReentrantKeyed let code that already holds a permit
//     (in its ctx) acquire the same semaphore again without waiting.
//   - FailurePolicy, Observer and the errors below are shared by every
//     backend.
//
// The network backends live in their own packages: core/redissem (Redis:
// standalone, Sentinel, Cluster; a quorum of masters) and core/consul (in
// a module of its own).
//
// What every backend guarantees (the limit, FIFO order, leases, fencing
// tokens, the failure policy, reentrancy) and where each guarantee stops
// is written once, in
// https://github.com/distsem/distsem/blob/main/docs/GUARANTEES.md; core/semtest
// checks the shared part on every backend.
//
//	sem := core.NewLocal(8)
//	p, err := sem.Acquire(ctx) // FIFO; ends with ctx
//	if err != nil {
//		return err
//	}
//	defer p.Release(context.WithoutCancel(ctx))
//
// # Errors
//
// Outcomes stay distinguishable with errors.Is: context.Canceled (the
// caller gave up), ErrNoPermit (no capacity: TryAcquire, or a ctx deadline
// that passed while waiting, which also matches context.DeadlineExceeded),
// ErrUnavailable (the backend failed; see FailurePolicy), ErrInvalidArgument,
// ErrNotHeld and ErrClosed. A ctx with a cause (context.WithCancelCause,
// WithTimeoutCause) still gives context.Canceled or DeadlineExceeded; the
// cause is wrapped as well and named in the message. Constructors panic on
// programmer errors, with a message that starts with the package's name:
// a nil client, a limit outside [1, MaxLimit], a bad name, a bad option or
// one the constructor cannot honour (see Option).
//
// # Writing a backend
//
// A backend builds on the API above and on package core/backend, the
// extension point: it makes the permits a backend hands out, reads the
// options, and makes a keyed semaphore of any backend. core/redissem and
// core/consul are built on these, with no access to core's internals;
// core/semtest is the conformance suite that checks a backend.
//
// # Untrusted input and inspecting
//
// Keys, notes and flows may come from requests: Keyed bounds the memory
// that keys take, Key.Name says why no key reaches another semaphore, and
// every backend refuses limits and weights above MaxLimit. Every semaphore
// is an Inspector, which lists its holders and waiters for operators (see
// WithOwner and WithNote).
package core
