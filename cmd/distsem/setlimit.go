package main

import "context"

const setLimitHead = `Usage: distsem set-limit [flags] NAME N

Stores N as the limit of the semaphore NAME for every process that uses
it, at once: a higher limit grants waiters now; a lower one admits no one
until the permits in use fall below it. The limit stays stored while the
semaphore is idle, until another set-limit.
`

func (a *app) setLimitCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("set-limit")
	var bf backendFlags
	bf.register(fs)
	if err := a.parseFlags(fs, setLimitHead, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usageErrorf("set-limit: want NAME and N, got %d arguments (distsem set-limit [flags] NAME N)", fs.NArg())
	}
	name := fs.Arg(0)
	n, err := positiveInt("set-limit: N", fs.Arg(1))
	if err != nil {
		return err
	}
	b, err := newBackend(&bf)
	if err != nil {
		return err
	}
	defer b.close()
	sem, err := b.open(name, n, 0)
	if err != nil {
		return err
	}
	defer sem.Close()
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := sem.SetLimit(ctx, n); err != nil {
		return backendError(err)
	}
	return nil
}
