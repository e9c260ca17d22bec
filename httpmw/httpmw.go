package httpmw

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
)

// Limit returns a middleware that runs a handler only while the request
// holds a permit of sem for its key. All handlers wrapped by one returned
// middleware share one admit.Controller (one waiting bound per key). It
// panics if sem is nil, the status is not a 4xx or 5xx code, or an admit
// option is out of range.
func Limit(sem core.KeyedSemaphore, opts ...Option) func(http.Handler) http.Handler {
	o := defaultOptions()
	for _, f := range opts {
		f(&o)
	}
	if o.status < 400 || o.status > 599 {
		panic(fmt.Sprintf("httpmw: WithStatus expects a 4xx or 5xx code, got %d", o.status))
	}
	ctl := admit.New(sem, o.admit...)
	return func(next http.Handler) http.Handler {
		return &handler{next: next, ctl: ctl, o: o}
	}
}

// Handler returns h limited by sem: Limit(sem, opts...)(h).
func Handler(h http.Handler, sem core.KeyedSemaphore, opts ...Option) http.Handler {
	return Limit(sem, opts...)(h)
}

type handler struct {
	next http.Handler
	ctl  *admit.Controller
	o    options
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t, err := h.ctl.Acquire(ctx, h.o.key(r))
	if err != nil {
		h.rejected(w, r, err.(*admit.Rejection))
		return
	}
	// A deferred call also runs while a panic unwinds; the panic goes on.
	defer t.Release(ctx)
	h.next.ServeHTTP(w, r.WithContext(t.Context(ctx))) // handlers can reenter
}

func (h *handler) rejected(w http.ResponseWriter, r *http.Request, rej *admit.Rejection) {
	code := 0
	switch rej.Reason {
	case admit.NoCapacity:
		code = h.o.status
	case admit.Unavailable:
		code = http.StatusServiceUnavailable
	}
	if code != 0 && h.o.retryAfter != "" {
		w.Header().Set("Retry-After", h.o.retryAfter)
	}
	h.o.reject(w, r, code, rej)
}

func defaultReject(w http.ResponseWriter, _ *http.Request, code int, _ *admit.Rejection) {
	if code == 0 {
		return // the client went away: there is no one to answer
	}
	http.Error(w, http.StatusText(code), code)
}

// retryAfter formats d as a Retry-After value in whole seconds, rounded up.
func retryAfter(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}
