package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// backendFlags are the flags of every command that say where the
// semaphores live.
type backendFlags struct {
	kind       string
	redisURL   string
	consulAddr string
	prefix     string
}

func (b *backendFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.kind, "backend", "redis", "where the semaphores live: redis or consul")
	fs.StringVar(&b.redisURL, "redis", "", "the Redis `URL` (default $REDIS_URL; 'distsem -h' lists the schemes)")
	fs.StringVar(&b.consulAddr, "consul", "", "the Consul HTTP `address` (default $CONSUL_HTTP_ADDR, else 127.0.0.1:8500)")
	fs.StringVar(&b.prefix, "prefix", "distsem:", "the `prefix` of every key of the backend")
}

// newFlagSet returns the flag set of the command name; it prints nothing
// itself (see parseFlags).
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("distsem "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// errHelp ends a command that printed its usage because of -h.
var errHelp = &exitError{code: exitOK}

// parseFlags parses args into fs. On -h it prints head and fs's flags on
// stdout and returns errHelp; on a bad flag, a one-line usage error.
func (a *app) parseFlags(fs *flag.FlagSet, head string, args []string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(a.stdout, head+"\nFlags:\n")
		fs.SetOutput(a.stdout)
		fs.PrintDefaults()
		return errHelp
	}
	if err != nil {
		return usageErrorf("%s: %v (see '%s -h')", strings.TrimPrefix(fs.Name(), "distsem "), err, fs.Name())
	}
	return nil
}

// positiveInt parses arg, named what, as an integer of at least 1.
func positiveInt(what, arg string) (int64, error) {
	n, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || n < 1 {
		return 0, usageErrorf("%s must be an integer of at least 1, not %q", what, arg)
	}
	return n, nil
}

// envOr returns v, or else the environment variable env.
func envOr(v, env string) string {
	if v != "" {
		return v
	}
	return os.Getenv(env)
}
