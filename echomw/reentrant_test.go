package echomw_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/echomw"
)

// The handler finds the request's permit in its request's ctx: a reentrant
// Acquire of the same semaphore (limit 1) nests in it instead of waiting
// for itself, and core.PermitFromContext returns it also when the
// semaphore is not reentrant. This is why the middleware copies the
// request (WithContext).
func TestHandlerCtxHoldsPermit(t *testing.T) {
	for _, reentrant := range []bool{false, true} {
		base := core.NewLocalKeyed(1)
		var sem core.KeyedSemaphore = base
		if reentrant {
			sem = core.ReentrantKeyed(base)
		}
		e := echo.New()
		e.Use(echomw.Limit(sem))
		var inCtx *core.Permit
		var nested error
		e.GET("/w", func(c echo.Context) error {
			ctx := c.Request().Context()
			inCtx = core.PermitFromContext(ctx)
			if reentrant {
				ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				p, err := sem.Acquire(ctx, "GET /w")
				if err == nil {
					err = p.Release(ctx)
				}
				nested = err
			}
			return c.String(http.StatusOK, "ok")
		})
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest("GET", "/w", nil))
		if rec.Code != http.StatusOK || inCtx == nil || inCtx.Token() == 0 || nested != nil {
			t.Errorf("reentrant %v: status %d, permit in ctx %v, nested acquire: %v", reentrant, rec.Code, inCtx, nested)
		}
		if st, _ := base.Stats(context.Background(), "GET /w"); st.InUse != 0 {
			t.Errorf("reentrant %v: in use after the request: %d", reentrant, st.InUse)
		}
		base.Close()
	}
}
