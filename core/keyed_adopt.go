package core

import "context"

// adopter is a key's semaphore whose permits can cross processes (see
// core/redissem's Semaphore.Adopt and ReleaseID).
type adopter interface {
	Adopt(ctx context.Context, id string) (*Permit, error)
	ReleaseID(ctx context.Context, id string) error
}

// Adopt takes over, on the semaphore of key, the permit id that a keyed
// semaphore of the same backend, name and storage granted for key in any
// process (see the backend's Adopt). It returns an ErrInvalidArgument
// error when the backend's permits cannot cross processes (Local, the
// leased mode, Consul), ErrClosed after Close, and otherwise what the
// backend's Adopt returns.
func (k *Keyed) Adopt(ctx context.Context, key, id string) (*Permit, error) {
	e, err := k.ref(key)
	if err != nil {
		return nil, err
	}
	a, ok := e.sem.(adopter)
	if !ok {
		k.unref(e)
		return nil, invalid("Adopt: the permits of this keyed semaphore's backend cannot cross processes")
	}
	p, err := a.Adopt(ctx, id)
	if err != nil {
		k.unref(e)
		return nil, err
	}
	return e.wrap(p), nil
}

// ReleaseID releases, on the semaphore of key, the permit id, whichever
// process holds it (see the backend's ReleaseID). It returns an
// ErrInvalidArgument error when the backend's permits cannot cross
// processes, ErrClosed after Close, and otherwise what the backend's
// ReleaseID returns.
func (k *Keyed) ReleaseID(ctx context.Context, key, id string) error {
	e, err := k.ref(key)
	if err != nil {
		return err
	}
	defer k.unref(e)
	a, ok := e.sem.(adopter)
	if !ok {
		return invalid("ReleaseID: the permits of this keyed semaphore's backend cannot cross processes")
	}
	return a.ReleaseID(ctx, id)
}
