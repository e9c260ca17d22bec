package redissem

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

func unavailable(op, name string, cause error) error {
	return fmt.Errorf("%w: %s %q: %w", core.ErrUnavailable, op, name, cause)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", core.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// ctxError is the error of a call whose ctx ended: see backend.WaitError.
func ctxError(ctx context.Context, name string) error { return backend.WaitError(ctx, name) }

// checkName panics unless name can name a semaphore: not empty, and
// without '{', '}', '#' (the separator of keyed semaphores' keys) or white
// space.
func checkName(ctor, name string) {
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return r == '{' || r == '}' || r == '#' || unicode.IsSpace(r) }) >= 0 {
		panic(fmt.Sprintf("redissem: %s: semaphore name %q must be non-empty, without '{', '}', '#' or white space", ctor, name))
	}
}

// checkLimit panics unless 0 < limit <= core.MaxLimit.
func checkLimit(what string, limit int64) {
	if limit <= 0 || limit > core.MaxLimit {
		panic(fmt.Sprintf("redissem: %s must be in [1, %d], got %d", what, core.MaxLimit, limit))
	}
}

// limitError returns an ErrInvalidArgument error unless 0 < limit <=
// core.MaxLimit.
func limitError(limit int64) error {
	if limit <= 0 || limit > core.MaxLimit {
		return invalid("limit %d must be in [1, %d]", limit, core.MaxLimit)
	}
	return nil
}

// checkFairness panics, naming ctor, if cfg's Fairness fails its Check
// against limit.
func checkFairness(ctor string, cfg config, limit int64) {
	if err := cfg.fair.Check(limit); err != nil {
		panic(fmt.Sprintf("redissem: %s: WithFairness: %v", ctor, err))
	}
}
