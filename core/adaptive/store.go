package adaptive

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/distsem/distsem/core"
)

// Store holds what the processes of one semaphore share: each window's
// aggregate of their samples, who computes each window, and the
// controller's State. MemStore keeps it in process; core/adaptive/redisstore
// keeps it in Redis, under the semaphore's hash tag.
type Store interface {
	// Sync adds req.Samples, this process's samples of window req.Window,
	// to that window's aggregate, once per (req.Process, window): a Sync
	// repeated for the same process and window counts once. In the same
	// step it elects at most one process per window to compute the window
	// before: the first to sync after it. Sync returns an error matching
	// core.ErrInvalidArgument, and counts nothing, for samples with a
	// negative count or latency; a wrapped cause if the store failed.
	Sync(ctx context.Context, req SyncRequest) (SyncReply, error)
	// Save stores st, unless the state stored is of a window >= st.Window.
	Save(ctx context.Context, length time.Duration, st State) error
}

// SyncRequest is one process's Sync of one window.
type SyncRequest struct {
	Process string
	// Length is the window length: windows of different lengths are kept
	// apart.
	Length time.Duration
	// Window is the window the samples belong to: their start divided by
	// Length, in the store's clock. 0 asks the store to pick the window
	// before its current one.
	Window  int64
	Samples Window
}

// SyncReply is the answer to a Sync.
type SyncReply struct {
	Now    time.Time // the store's clock when it answered
	Window int64     // the window the samples were added to
	// Elected reports that this process computes window Window − 1,
	// whose aggregate is Aggregate.
	Elected   bool
	Aggregate Window
	// State is the state stored, and HasState whether there is one.
	State    State
	HasState bool
}

// CheckSamples returns an error matching core.ErrInvalidArgument unless
// every count and the latency of w are >= 0, and the failures are at most
// the samples. Stores call it before they count anything.
func CheckSamples(w Window) error {
	if w.Samples < 0 || w.Latency < 0 || w.Failed < 0 || w.TimedOut < 0 || w.Failed+w.TimedOut > w.Samples {
		return invalid("bad samples %+v", w)
	}
	return nil
}

// MemStore is a Store in process memory, for semaphores whose processes
// are one (core.Local) and for tests; its clock is time.Now. The zero
// MemStore is ready to use. It forgets windows older than 8 windows.
type MemStore struct {
	mu      sync.Mutex
	windows map[memKey]*memWindow
	states  map[time.Duration]State
}

type memKey struct {
	length time.Duration
	n      int64
}

type memWindow struct {
	agg     Window
	procs   map[string]bool
	elected bool
}

var _ Store = (*MemStore)(nil)

// Sync implements Store.
func (m *MemStore) Sync(ctx context.Context, req SyncRequest) (SyncReply, error) {
	if err := CheckSamples(req.Samples); err != nil {
		return SyncReply{}, err
	}
	if req.Length <= 0 || req.Process == "" {
		return SyncReply{}, invalid("bad sync request: length %v, process %q", req.Length, req.Process)
	}
	if err := ctx.Err(); err != nil {
		return SyncReply{}, fmt.Errorf("%w: adaptive: %w", core.ErrUnavailable, err)
	}
	now := time.Now()
	cur := now.UnixNano() / int64(req.Length)
	n := req.Window
	if n < cur-2 || n > cur {
		n = cur - 1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.windows == nil {
		m.windows, m.states = make(map[memKey]*memWindow), make(map[time.Duration]State)
	}
	for k := range m.windows {
		if k.length == req.Length && k.n < cur-8 {
			delete(m.windows, k)
		}
	}
	w := m.window(memKey{req.Length, n})
	if !w.procs[req.Process] {
		w.procs[req.Process] = true
		w.agg.Samples += req.Samples.Samples
		w.agg.Latency += req.Samples.Latency
		w.agg.Failed += req.Samples.Failed
		w.agg.TimedOut += req.Samples.TimedOut
	}
	r := SyncReply{Now: now, Window: n}
	r.State, r.HasState = m.states[req.Length]
	if prev := m.window(memKey{req.Length, n - 1}); !prev.elected {
		prev.elected, r.Elected, r.Aggregate = true, true, prev.agg
	}
	return r, nil
}

func (m *MemStore) window(k memKey) *memWindow {
	w := m.windows[k]
	if w == nil {
		w = &memWindow{procs: make(map[string]bool)}
		m.windows[k] = w
	}
	return w
}

// Save implements Store.
func (m *MemStore) Save(ctx context.Context, length time.Duration, st State) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: adaptive: %w", core.ErrUnavailable, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.states == nil {
		m.windows, m.states = make(map[memKey]*memWindow), make(map[time.Duration]State)
	}
	if old, ok := m.states[length]; !ok || old.Window < st.Window {
		m.states[length] = st
	}
	return nil
}
