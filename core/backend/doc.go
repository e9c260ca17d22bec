// Package backend is the extension point of distsem: what a semaphore
// backend builds on, besides the API of package core. core/redissem and
// core/consul are built on it; users of a backend need none of it.
//
// A backend implements core.Semaphore (and core.LimitSemaphore, to be
// keyed), reads its configuration with ResolveOptions and ResolveAcquire,
// and hands out *core.Permit values made by NewPermit. A permit keeps its
// guarantees whatever the backend: Release runs the backend's release at
// most once; Lost, Token, GrantedAt and ID report what the backend granted;
// SetLeaseTTL reaches a backend whose Releaser is a LeaseSetter. NewKeyed
// makes a keyed semaphore of any backend, and core.Reentrant and
// core.ReentrantKeyed work on any. WrapPermit serves a semaphore that wraps
// another (core/adaptive), and Share a backend that leases each process a
// share of a fleet-wide limit. core/semtest is the conformance suite that
// checks a backend.
package backend
