package httpmw

import (
	"fmt"
	"net/http"
	"reflect"
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
	hint, ok, err := admit.RetryAfter(o.retryWait)
	if err != nil {
		panic("httpmw: " + err.Error())
	}
	if ok {
		o.retryAfter = strconv.FormatInt(int64((hint+time.Second-1)/time.Second), 10)
	}
	ctl := admit.New(sem, o.admit...)
	return func(next http.Handler) http.Handler {
		mux, _ := next.(*http.ServeMux)
		return &handler{next: next, mux: mux, ctl: ctl, o: o}
	}
}

// Handler returns h limited by sem: Limit(sem, opts...)(h).
func Handler(h http.Handler, sem core.KeyedSemaphore, opts ...Option) http.Handler {
	return Limit(sem, opts...)(h)
}

// UnroutedKey is the default key of a request that carries no ServeMux
// pattern (Request.Pattern is empty) through a middleware that does not
// wrap a *http.ServeMux, such as one around a chi router or a single
// handler: all such requests share this one key. Use WithKey to key them
// by something else, such as chi's route pattern; never key by the raw
// path, which the client chooses.
const UnroutedKey = "unrouted"

// redirectType is the type of the handler ServeMux.Handler returns for a
// redirect.
var redirectType = reflect.TypeOf(http.RedirectHandler("/", http.StatusMovedPermanently))

type handler struct {
	next http.Handler
	mux  *http.ServeMux // next, when it is one
	ctl  *admit.Controller
	o    options
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := ""
	switch {
	case h.o.key != nil:
		key = h.o.key(r)
	case h.mux != nil:
		// The wrapped mux's own pattern, even when r.Pattern is set: then
		// it names the route of an outer mux this one is mounted on.
		if mh, pattern := h.mux.Handler(r); pattern != "" && reflect.TypeOf(mh) != redirectType {
			key = pattern
		} else {
			// No route matched: the mux answers 404, 405 or a redirect
			// itself (a redirect's "pattern" may be the client's path).
			// Keying by path would give every client-invented path a
			// semaphore of its own; such answers cost nothing, so they
			// take no permit.
			h.next.ServeHTTP(w, r)
			return
		}
	case r.Pattern != "":
		key = r.Pattern
	default:
		key = UnroutedKey
	}
	ctx := r.Context()
	if h.o.flow != nil {
		flow, level := h.o.flow(r)
		ctx = core.ContextWithFlow(ctx, flow, level)
	}
	t, err := h.ctl.Acquire(ctx, key)
	if err != nil {
		h.rejected(w, r, err.(*admit.Rejection))
		return
	}
	// A deferred call also runs while a panic unwinds; the panic goes on.
	completed := false
	defer func() { t.Release(outcomeContext(ctx, completed)) }()
	// The handler gets the permit in its request's ctx: core.PermitFromContext
	// (its token, for fencing) and a reentrant Acquire of the same semaphore
	// read it there. That costs a copy of the request (r.WithContext) and a
	// ctx, 2 allocations per request, which cannot be avoided: a Request's
	// ctx changes only through WithContext, and a middleware must not
	// modify the request it was given.
	h.next.ServeHTTP(w, r.WithContext(t.Context(ctx)))
	completed = true
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
