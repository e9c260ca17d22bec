package main

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/consul"
	"github.com/hashicorp/consul/api"
)

// The implementations compared, and the HTTP transport that counts their
// requests to the agent.

func hashicorp(shared *api.Client, addr string) impl {
	return impl{name: "api.Semaphore", newWorker: func(prefix string, limit int, blocked chan struct{}) (func(context.Context) (func(), int64, error), func()) {
		c := shared
		if blocked != nil {
			c = newClient(addr, blocked)
		}
		sem, err := c.SemaphoreOpts(&api.SemaphoreOptions{Prefix: prefix, Limit: limit})
		if err != nil {
			log.Fatal(err)
		}
		return func(ctx context.Context) (func(), int64, error) {
			stop := make(chan struct{})
			defer context.AfterFunc(ctx, func() { close(stop) })()
			lost, err := sem.Acquire(stop)
			if err != nil {
				return nil, 0, err
			}
			if lost == nil {
				return nil, 0, ctx.Err()
			}
			return func() { _ = sem.Release() }, 0, nil
		}, func() {}
	}}
}

func distsem(shared *api.Client, addr string) impl {
	return impl{name: "distsem consul", newWorker: func(prefix string, limit int, blocked chan struct{}) (func(context.Context) (func(), int64, error), func()) {
		c := shared
		if blocked != nil {
			c = newClient(addr, blocked)
		}
		i := strings.LastIndexByte(prefix, '/')
		sem := consul.New(c, prefix[i+1:], int64(limit), core.WithKeyPrefix(prefix[:i+1]))
		return func(ctx context.Context) (func(), int64, error) {
				p, err := sem.Acquire(ctx)
				if err != nil {
					return nil, 0, err
				}
				return func() { _ = p.Release(context.Background()) }, p.Token(), nil
			}, func() {
				_ = sem.Close()
			}
	}}
}

// local is the control: core.Local, shared by the workers of a run.
func local() impl {
	var sems sync.Map  // prefix -> *core.Local
	var waits sync.Map // prefix -> the blocked channel of its next waiter
	return impl{name: "core.Local (control)", newWorker: func(prefix string, limit int, blocked chan struct{}) (func(context.Context) (func(), int64, error), func()) {
		if blocked != nil {
			waits.Store(prefix, blocked)
		}
		v, _ := sems.LoadOrStore(prefix, core.NewLocal(int64(limit), core.WithObserver(core.ObserverFunc(func(e core.Event) {
			if ch, ok := waits.Load(prefix); ok && e.Kind == core.EventWait && waits.CompareAndDelete(prefix, ch) {
				close(ch.(chan struct{}))
			}
		}))))
		sem := v.(*core.Local)
		return func(ctx context.Context) (func(), int64, error) {
			p, err := sem.Acquire(ctx)
			if err != nil {
				return nil, 0, err
			}
			return func() { _ = p.Release(context.Background()) }, p.Token(), nil
		}, func() {}
	}}
}

// newClient returns a client of the agent at addr whose requests are
// counted. A non-nil blocked is closed once its first blocking query has
// been written to the agent.
func newClient(addr string, blocked chan struct{}) *api.Client {
	var rt http.RoundTripper = counting{&http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: !gzip}}
	if blocked != nil {
		rt = &blockWatch{rt: rt, blocked: blocked}
	}
	c, err := api.NewClient(&api.Config{Address: addr, HttpClient: &http.Client{Transport: rt}})
	if err != nil {
		log.Fatal(err)
	}
	return c
}

// blockWatch closes blocked once a blocking query (one with an index)
// has been written to the agent.
type blockWatch struct {
	rt      http.RoundTripper
	once    sync.Once
	blocked chan struct{}
}

func (b *blockWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Query().Get("index") != "" {
		r = r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { b.once.Do(func() { close(b.blocked) }) },
		}))
	}
	return b.rt.RoundTrip(r)
}

// counting counts the HTTP requests to the agent by kind.
type counting struct{ rt http.RoundTripper }

var (
	gzip         = true   // -gzip
	counts       sync.Map // kind -> *atomic.Int64
	logConflicts bool     // -why
)

func (c counting) RoundTrip(r *http.Request) (*http.Response, error) {
	kind := r.Method + " " + r.URL.Path
	if i := strings.Index(r.URL.Path, "/kv/"); i >= 0 {
		kind = r.Method + " kv"
		if r.URL.Query().Has("recurse") {
			kind += " list"
		}
		if r.URL.Query().Has("index") {
			kind += " blocking"
		}
	} else if strings.HasPrefix(r.URL.Path, "/v1/session/") {
		kind = r.Method + " session"
	}
	n, _ := counts.LoadOrStore(kind, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	t0 := time.Now()
	resp, err := c.rt.RoundTrip(r)
	if !strings.Contains(kind, "blocking") {
		latMu.Lock()
		lat[kind] = append(lat[kind], time.Since(t0))
		latMu.Unlock()
	}
	if err == nil && resp.StatusCode == http.StatusConflict { // a transaction whose check failed
		n, _ := counts.LoadOrStore(kind+" failed", new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		if logConflicts {
			body, _ := io.ReadAll(resp.Body)
			resp.Body = io.NopCloser(bytes.NewReader(body))
			log.Printf("409: %s %s", time.Now().Format("05.000"), bytes.Join(bytes.Fields(body), nil))
		}
	}
	return resp, err
}

var (
	latMu sync.Mutex
	lat   = map[string][]time.Duration{} // non-blocking requests' latency by kind, since the last latencies()
)
