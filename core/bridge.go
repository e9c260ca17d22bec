package core

import (
	"context"
	"time"

	"github.com/distsem/distsem/core/internal/bridge"
)

// This file hands core/backend, the extension point for backends, what it
// needs of this package's internals (see core/internal/bridge). Users of a
// backend need none of it.

// extReleaser gives back the permits of a backend outside this package
// (backend.Releaser).
type extReleaser = interface {
	ReleasePermit(ctx context.Context, p *Permit) error
}

// leaseSetter is an extReleaser whose permits' lease can change
// (backend.LeaseSetter).
type leaseSetter = interface {
	SetPermitLease(ctx context.Context, p *Permit, ttl time.Duration) error
}

func init() {
	bridge.NewPermit = func(r extReleaser, weight, token int64, grantedAt time.Time, lost chan struct{}, id string) *Permit {
		x := permitExt{owner: nopOwner{}, lost: lost, id: id}
		if r != nil {
			x.owner, x.ext = nil, r
		}
		if !grantedAt.IsZero() {
			x.grantUS = grantedAt.UnixMicro()
		}
		return newPermit(x, weight, token)
	}
	bridge.WrapPermit = func(inner *Permit, r extReleaser) *Permit {
		p := wrapPermit(nil, inner)
		p.ext = r
		return p
	}
	bridge.NewKeyed = func(name string, def int64, newSem func(Key, int64) LimitSemaphore, closeAll func() error, opts []Option) *Keyed {
		checkName(name)
		cfg := buildConfig(opts)
		cfg.refuse("NewKeyed", optsRemote|optsKeyed)
		return newKeyed(def, cfg, newSem, closeAll)
	}
	bridge.ResolveOptions = func(opts []Option) (string, time.Duration, Observer, func(error), FailurePolicy, string, bool) {
		c := buildConfig(opts)
		c.refuse("ResolveOptions", optsRemote|optsKeyed)
		return c.prefix, c.leaseTTL, c.observer, c.onError, c.policy, c.owner, c.given&optsKeyed != 0
	}
	bridge.ResolveAcquire = func(def time.Duration, opts []AcquireOption) (int64, time.Duration, bool, string, string, int, error) {
		a, err := buildAcquire(def, opts)
		return a.weight, a.ttl, a.ttlSet, a.note, a.flow, a.level, err
	}
	bridge.WaitError = ctxError
	bridge.NewShare = func(name string, limit int64, opts []Option) *Local {
		cfg := buildConfig(opts)
		cfg.refuse("NewShare", optsLocal&^optFairness)
		return newShare(name, limit, cfg)
	}
	bridge.SetShare = (*Local).setShare
	bridge.ShareState = (*Local).shareState
	bridge.RaiseTokens = (*Local).raiseTokens
}
