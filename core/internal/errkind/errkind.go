// Package errkind sorts a backend error into the few kinds that the
// metrics modules (core/promsem, core/otelsem) label it with, so that both
// say the same of one error.
package errkind

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
)

// Kinds are the values Of returns.
var Kinds = []string{"timeout", "network", "server", "closed", "other"}

// Of returns err's kind: "timeout", "network", "server" (an error reply
// from Redis), "closed" or "other".
func Of(err error) string {
	var rerr redis.Error
	var nerr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return "timeout"
	case errors.Is(err, core.ErrClosed), errors.Is(err, redis.ErrClosed), errors.Is(err, net.ErrClosed):
		return "closed"
	case errors.As(err, &rerr):
		return "server"
	case errors.As(err, &nerr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "network"
	}
	return "other"
}
