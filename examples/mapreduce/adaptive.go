package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/adaptive"
	"github.com/distsem/distsem/core/adaptive/redisstore"
)

// kindLimit is the report of a worker that computed a window of the
// adaptive limit: {"kind":"limit","at":<unix ns>,"limit":N}.
const kindLimit = "limit"

// adaptiveSem wraps sem in an adaptive limit (-adaptive) whose windows are
// shared in Redis; the worker that computes a window reports the limit it
// set. Close the Limiter before sem.
func adaptiveSem(client redis.UniversalClient, name string, sem core.LimitSemaphore, out *reportWriter) (*adaptive.Limiter, error) {
	obs := adaptive.ObserverFunc(func(e adaptive.Event) {
		if e.Kind == adaptive.EventDecision {
			out.send(report{Kind: kindLimit, At: time.Now().UnixNano(), Limit: e.Limit})
		}
	})
	return adaptive.New(sem, redisstore.New(client, name), adaptive.WithObserver(obs))
}

// limitStep is the adaptive limit from an instant on.
type limitStep struct {
	at    int64 // unix ns
	limit int64
}

// limitPath returns the changes of the limit in time order, from the
// reports of every worker.
func limitPath(steps []limitStep) []limitStep {
	s := slices.Clone(steps)
	slices.SortFunc(s, func(a, b limitStep) int { return int(min(max(a.at-b.at, -1), 1)) })
	var path []limitStep
	for _, st := range s {
		if len(path) == 0 || path[len(path)-1].limit != st.limit {
			path = append(path, st)
		}
	}
	return path
}

// printLimitPath writes the path the adaptive limit took: each change with
// the time since the job's start.
func printLimitPath(w io.Writer, s *summary) {
	if len(s.limits) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  adaptive limit %d", s.Limit)
	for _, st := range limitPath(s.limits) {
		fmt.Fprintf(&b, " → %d (%.1fs)", st.limit, time.Duration(st.at-s.startNanos).Seconds())
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
}
