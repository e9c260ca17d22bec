package core

import "context"

// Adopt is Redis.Adopt on the semaphore of key: it takes over the permit
// id of that key (the ID of a permit that a Keyed of the same name, key
// prefix and Redis granted for key, in any process). It returns an
// ErrInvalidArgument error for an in-process Keyed, whose permits have no
// ID, ErrClosed after Close, and otherwise what Redis.Adopt returns.
func (k *Keyed) Adopt(ctx context.Context, key, id string) (*Permit, error) {
	e, err := k.ref(key)
	if err != nil {
		return nil, err
	}
	r, ok := e.sem.(*Redis)
	if !ok {
		k.unref(e)
		return nil, invalid("Adopt needs a Redis keyed semaphore")
	}
	p, err := r.Adopt(ctx, id)
	if err != nil {
		k.unref(e)
		return nil, err
	}
	return e.wrap(p), nil
}

// ReleaseID is Redis.ReleaseID on the semaphore of key. It returns an
// ErrInvalidArgument error for an in-process Keyed, ErrClosed after Close,
// and otherwise what Redis.ReleaseID returns.
func (k *Keyed) ReleaseID(ctx context.Context, key, id string) error {
	e, err := k.ref(key)
	if err != nil {
		return err
	}
	defer k.unref(e)
	r, ok := e.sem.(*Redis)
	if !ok {
		return invalid("ReleaseID needs a Redis keyed semaphore")
	}
	return r.ReleaseID(ctx, id)
}
