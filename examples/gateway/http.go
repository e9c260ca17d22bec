package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/distsem/distsem/echomw"
	"github.com/distsem/distsem/httpmw"
)

// httpHandler serves the routes on a ServeMux; httpmw keys requests by
// their pattern ("GET /work").
func (g *gateway) httpHandler() http.Handler {
	limit := httpmw.Limit(g.sem,
		httpmw.WithMaxWait(g.cfg.maxWait),
		httpmw.WithMaxWaiting(g.cfg.maxWaiting),
		httpmw.WithObserver(g.col))
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ms := msOf(r.Context())
		hold(r.Context(), ms)
		fmt.Fprintf(w, "ok %dms\n", ms)
	})
	// A bad ms is refused (400) before the request takes a permit.
	mux := http.NewServeMux()
	mux.Handle("GET /work", withMS(limit(work)))
	mux.Handle("GET /report", withMS(limit(work)))
	mux.Handle("GET /metrics", promhttp.HandlerFor(g.reg, promhttp.HandlerOpts{}))
	return mux
}

// echoHandler serves the same routes on Echo; echomw keys requests by
// method and route ("GET /work"), as httpmw does, so both share limits.
func (g *gateway) echoHandler() http.Handler {
	e := echo.New()
	e.HideBanner = true
	limit := echomw.LimitWithConfig(echomw.Config{
		Semaphore:  g.sem,
		MaxWait:    g.cfg.maxWait,
		MaxWaiting: g.cfg.maxWaiting,
		Observer:   g.col,
	})
	work := func(c echo.Context) error {
		ms := c.Get("ms").(int64)
		hold(c.Request().Context(), ms)
		return c.String(http.StatusOK, fmt.Sprintf("ok %dms\n", ms))
	}
	e.GET("/work", work, echoMS, limit) // echoMS runs first
	e.GET("/report", work, echoMS, limit)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(g.reg, promhttp.HandlerOpts{})))
	return e
}

// serveHTTP serves h on -addr until ctx ends.
func (g *gateway) serveHTTP(ctx context.Context, h http.Handler) error {
	ln, err := net.Listen("tcp", g.cfg.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	log.Printf("%s gateway on http://%s (GET /work limit %d, GET /report limit %d, max wait %v)",
		g.cfg.mode, ln.Addr(), g.cfg.limit, g.cfg.reportLimit, g.cfg.maxWait)
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	})
	defer stop()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
