package core_test

import (
	"context"
	"errors"
	"testing"

	"github.com/distsem/distsem/core"
)

// FuzzKeyedLocal runs a sequence of keyed operations, decoded from the
// input, on an in-process keyed semaphore with a tiny idle bound, and checks
// that none panics, that no key is over its limit, that the idle bound
// holds, and that every permit comes back. Run longer with
//
//	go test -run '^$' -fuzz '^FuzzKeyedLocal$' -fuzztime 10m ./core/
func FuzzKeyedLocal(f *testing.F) {
	f.Add([]byte("\x00a\x01b\x02a\x03\x04a\x05"), "key")
	f.Add([]byte("\x00\xff\x00\xfe\x06\x07\x02\x02"), "")
	f.Fuzz(func(t *testing.T, ops []byte, base string) {
		ctx := context.Background()
		const maxIdle = 2
		k := core.NewLocalKeyed(2, core.WithMaxIdleKeys(maxIdle), core.WithLimits(map[string]int64{base: 1}))
		keys := []string{base, base + "#", "#" + base, base + ":x", ""}
		held := map[string][]*core.Permit{}
		closed := false
		for i := 0; i+1 < len(ops); i += 2 {
			key := keys[int(ops[i+1])%len(keys)]
			switch ops[i] % 8 {
			case 0, 1: // TryAcquire (weight 1 or 2)
				p, err := k.TryAcquire(ctx, key, core.WithWeight(int64(1+ops[i]%2)))
				switch {
				case err == nil:
					held[key] = append(held[key], p)
				case closed && errors.Is(err, core.ErrClosed),
					errors.Is(err, core.ErrNoPermit), errors.Is(err, core.ErrInvalidArgument):
				default:
					t.Fatalf("TryAcquire(%q): %v", key, err)
				}
			case 2: // Release the oldest permit of key
				if ps := held[key]; len(ps) > 0 {
					if err := ps[0].Release(ctx); err != nil {
						t.Fatalf("Release: %v", err)
					}
					held[key] = ps[1:]
				}
			case 3: // SetLimit
				err := k.SetLimit(ctx, key, int64(1+ops[i+1]%3))
				if err != nil && !(closed && errors.Is(err, core.ErrClosed)) {
					t.Fatalf("SetLimit: %v", err)
				}
			case 4: // Stats: never above the limit, equal to what we hold
				st, err := k.Stats(ctx, key)
				if closed {
					continue
				}
				if err != nil {
					t.Fatalf("Stats: %v", err)
				}
				var w int64
				for _, p := range held[key] {
					w += p.Weight()
				}
				if st.InUse != w {
					t.Fatalf("key %q: stats %+v, held weight %d", key, st, w)
				}
			case 5: // Close
				if err := k.Close(); err != nil {
					t.Fatal(err)
				}
				closed = true
			case 6: // a long key
				p, err := k.TryAcquire(ctx, string(make([]byte, core.MaxKeyLen+int(ops[i+1]))))
				if err == nil {
					err = p.Release(ctx)
				}
				if err != nil && !errors.Is(err, core.ErrClosed) {
					t.Fatalf("long key: %v", err)
				}
			case 7: // bad arguments never change state
				if _, err := k.TryAcquire(ctx, key, core.WithWeight(-int64(ops[i+1]))); !errors.Is(err, core.ErrInvalidArgument) && !errors.Is(err, core.ErrClosed) {
					t.Fatalf("bad weight: %v", err)
				}
			}
			busy := 0
			for _, ps := range held {
				if len(ps) > 0 {
					busy++
				}
			}
			if n := k.Len(); n > maxIdle+busy {
				t.Fatalf("%d keys kept, %d busy, idle bound %d", n, busy, maxIdle)
			}
		}
		for _, ps := range held {
			for _, p := range ps {
				if err := p.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !closed {
			for _, key := range keys {
				if st, err := k.Stats(ctx, key); err != nil || st.InUse != 0 {
					t.Fatalf("key %q after releasing all: %+v, %v", key, st, err)
				}
			}
		}
		_ = k.Close()
	})
}
