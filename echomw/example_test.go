package echomw_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/echomw"
)

func ExampleLimit() {
	sem := core.NewLocalKeyed(100, core.WithLimits(map[string]int64{"GET /work": 1}))
	e := echo.New()
	e.GET("/work", func(c echo.Context) error { return c.String(http.StatusOK, "done") }, echomw.Limit(sem))

	p, _ := sem.Acquire(context.Background(), "GET /work") // the only permit is taken
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest("GET", "/work", nil))
	fmt.Println(rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())

	p.Release(context.Background())
	rec = httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest("GET", "/work", nil))
	fmt.Println(rec.Code, rec.Body.String())
	// Output:
	// 429 1 {"message":"Too Many Requests"}
	//
	// 200 done
}

func ExampleLimitWithConfig() {
	sem := core.NewLocalKeyed(1)
	e := echo.New()
	e.Use(echomw.LimitWithConfig(echomw.Config{
		Semaphore:  sem,
		MaxWait:    10 * time.Millisecond,
		RetryAfter: 5 * time.Second,
		DenyHandler: func(c echo.Context, key string, err error) error {
			return echo.ErrServiceUnavailable // 503, not 429; never put err in it
		},
	}))
	e.GET("/users/:id", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })

	p, _ := sem.Acquire(context.Background(), "GET /users/{id}") // keyed by route, not path
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest("GET", "/users/42", nil))
	fmt.Println(rec.Code)
	p.Release(context.Background())
	// Output: 503
}

func ExampleConfig_ToMiddleware() {
	_, err := echomw.Config{}.ToMiddleware()
	fmt.Println(err)
	// Output: echomw: Config.Semaphore must be provided
}
