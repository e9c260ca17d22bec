package faulttest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// replWatch samples INFO replication of each data server of a Sentinel set
// every 50 ms, an observation window for the log (nothing waits on it), and
// keeps a line each time a server's replication state changes: its role,
// its link to its master, and, for a master, each replica's state and how
// long ago it last acknowledged (lag, in seconds).
type replWatch struct {
	stop context.CancelFunc
	done chan struct{}
	mu   sync.Mutex
	rows []replRow
}

type replRow struct {
	at   time.Time
	addr string
	info string
}

// watchReplication starts sampling addrs until stop.
func watchReplication(addrs []string) *replWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &replWatch{stop: cancel, done: make(chan struct{})}
	clients := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1,
			DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, PoolSize: 1})
	}
	go func() {
		defer close(w.done)
		defer func() {
			for _, c := range clients {
				c.Close()
			}
		}()
		last := make([]string, len(addrs))
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			for i, c := range clients {
				info, err := c.Info(ctx, "replication").Result()
				if ctx.Err() != nil {
					return
				}
				key, line := replState(info, err)
				if key != last[i] {
					last[i] = key
					w.mu.Lock()
					w.rows = append(w.rows, replRow{time.Now(), addrs[i], line})
					w.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// lines stops the sampling and returns the changes, times relative to at.
func (w *replWatch) lines(at time.Time) []string {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, len(w.rows))
	for i, r := range w.rows {
		out[i] = fmt.Sprintf("%+dms %s %s", r.at.Sub(at).Milliseconds(), r.addr, r.info)
	}
	return out
}

// replState summarises an INFO replication reply: key is what counts as a
// change (offsets move with every write, so they are left out of it, and a
// replica's lag counts only from 2 s), line what is logged.
func replState(info string, err error) (key, line string) {
	if err != nil {
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return "down", "down (" + msg + ")"
	}
	f := map[string]string{}
	var replicas []string
	for _, l := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		if strings.HasPrefix(k, "slave") && strings.Contains(v, "state=") {
			replicas = append(replicas, v)
			continue
		}
		f[k] = v
	}
	switch f["role"] {
	case "master":
		var keys, lines []string
		for _, r := range replicas {
			kv := map[string]string{}
			for _, p := range strings.Split(r, ",") {
				k, v, _ := strings.Cut(p, "=")
				kv[k] = v
			}
			lag := kv["lag"]
			if lag == "0" || lag == "1" {
				lag = "≤1"
			}
			keys = append(keys, kv["port"]+" "+kv["state"]+" lag "+lag)
			lines = append(lines, fmt.Sprintf("%s %s offset %s lag %s", kv["port"], kv["state"], kv["offset"], kv["lag"]))
		}
		key = "master [" + strings.Join(keys, "; ") + "]"
		line = fmt.Sprintf("master offset %s, %s replica(s) [%s]", f["master_repl_offset"], f["connected_slaves"], strings.Join(lines, "; "))
	case "slave":
		key = fmt.Sprintf("replica of %s link %s sync %s", f["master_port"], f["master_link_status"], f["master_sync_in_progress"])
		line = fmt.Sprintf("%s, offset %s", key, f["slave_repl_offset"])
	default:
		key, line = "role "+f["role"], "role "+f["role"]
	}
	return key, line
}
