package servertest

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// QuietRedis silences go-redis's own log lines (a refused dial, a pool
// retry) for the rest of the process: the suites that stop, stall and
// restart servers on purpose would print them by the hundred, and a test
// reports what it checks itself.
func QuietRedis() { redis.SetLogger(quiet{}) }

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
