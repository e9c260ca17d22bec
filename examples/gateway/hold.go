package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// maxMS is the longest hold a request may ask for: a minute.
const maxMS = 60_000

// msRange names the accepted values of ms in error messages.
var msRange = fmt.Sprintf("whole milliseconds from 0 to %d", maxMS)

// parseMS reads the ms query parameter: absent is 0; otherwise it must be
// an integer from 0 to maxMS. The error names the parameter, the value and
// the accepted range.
func parseMS(s string, present bool) (int64, error) {
	if !present {
		return 0, nil
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms < 0 || ms > maxMS {
		return 0, fmt.Errorf("ms=%q: want %s", s, msRange)
	}
	return ms, nil
}

// checkMS is the gRPC form of parseMS, for a request's Int64Value.
func checkMS(ms int64) error {
	if ms < 0 || ms > maxMS {
		return fmt.Errorf("ms %d: want %s", ms, msRange)
	}
	return nil
}

type msKey struct{}

// withMS answers 400 to a request whose ms is not valid, before it takes a
// permit, and passes a valid one to next in the request's context (see
// msOf).
func withMS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		ms, err := parseMS(q.Get("ms"), q.Has("ms"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), msKey{}, ms)))
	})
}

// msOf returns the ms that withMS accepted.
func msOf(ctx context.Context) int64 { ms, _ := ctx.Value(msKey{}).(int64); return ms }

// echoMS is withMS for Echo: 400 before the limit, the value in the
// context's "ms".
func echoMS(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ms, err := parseMS(c.QueryParam("ms"), c.QueryParams().Has("ms"))
		if err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, err.Error())
		}
		c.Set("ms", ms)
		return next(c)
	}
}

// hold is the work of every route: keep the permit ms milliseconds, or
// until the client goes away.
func hold(ctx context.Context, ms int64) {
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
