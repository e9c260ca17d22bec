// Package cli gives the examples' commands Go's command-line conventions:
// -h prints the usage and exits 0; a usage error (a bad flag, a bad value,
// a stray argument) prints one line and exits 2; a failure of the command
// itself prints one line and exits 1; libraries print nothing unless asked.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/redis/go-redis/v9"
)

// UsageError is a bad command line. Run's caller exits 2 on it.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// Parse parses args with fs. It prints nothing itself on a bad flag:
// that comes back as a *UsageError whose text is one line. On -h or -help
// it writes doc and the flags' defaults to stdout and returns flag.ErrHelp.
// Positional arguments are a usage error.
func Parse(fs *flag.FlagSet, args []string, stdout io.Writer, doc string) error {
	fs.Init(fs.Name(), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fmt.Fprint(stdout, doc)
		fs.PrintDefaults()
		return flag.ErrHelp
	case err != nil:
		return &UsageError{Err: err}
	case fs.NArg() > 0:
		return Usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// ExitCode prints err, if any, as one line "name: err" to stderr, adding a
// pointer to -h for usage errors, and returns the exit code: 0 for nil or
// flag.ErrHelp, 2 for a *UsageError, 1 otherwise.
func ExitCode(name string, err error, stderr io.Writer) int {
	var ue *UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %v (see %s -h)\n", name, err, name)
		return 2
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return 1
}

// QuietRedis silences go-redis's own log lines (connection pool retries,
// printed before the error that the command reports anyway), unless
// verbose.
func QuietRedis(verbose bool) {
	if !verbose {
		redis.SetLogger(quiet{})
	}
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
