package redissem

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/fair"
)

// WithFairness sets how a Semaphore shares its limit between priority
// levels and flows (core.WithFlow, core.WithLevel) when nothing is stored
// in Redis yet; see core.Fairness. The default is the zero Fairness: one
// level, every flow of weight 1. Only New and NewKeyed (every key) take it.
//
// The Fairness lives in Redis, as the limit does: the first call with a
// flow or a level stores its process's configured Fairness with the
// semaphore's state, which expires with it when idle; a process configured
// with another one uses the stored one, so processes never disagree.
// SetFairness changes it for everyone and pins it (like SetLimit's limit,
// it outlives the idle semaphore). Each call with a flow or a level sends
// the configured Fairness along, so keep its Weights small, or give none
// and set them once with SetFairness.
//
// The constructor panics if the Fairness fails core.Fairness.Check against
// its limit (NewKeyed: the default limit).
func WithFairness(f core.Fairness) Option {
	return func(c *config) { c.fair, c.fairSet = f, true }
}

// encodeFairness is f as the scripts read it (lib_fair.lua): JSON
// {"r": reserves, "w": weights}, "" for the zero Fairness.
func encodeFairness(f core.Fairness) string {
	if len(f.Reserves) == 0 && len(f.Weights) == 0 {
		return ""
	}
	r := f.Reserves
	if r == nil {
		r = []int64{}
	}
	// A flow longer than core.MaxKeyLen is known by its label, as
	// core.WithFlow names it.
	w := make(map[string]int64, len(f.Weights))
	for flow, x := range f.Weights {
		if len(flow) > core.MaxKeyLen {
			flow = core.KeyLabel(flow)
		}
		w[flow] = x
	}
	b, err := json.Marshal(struct {
		R []int64          `json:"r"`
		W map[string]int64 `json:"w"`
	}{r, w})
	if err != nil {
		panic("redissem: encoding a Fairness: " + err.Error()) // maps of strings to ints always encode
	}
	return string(b)
}

// SetFairness stores f in Redis for every process sharing the semaphore
// and pins it (it no longer expires with the idle semaphore). Waiters are
// granted under the new reserves and weights at once; a queued waiter at a
// level that f no longer has fails with an ErrInvalidArgument error. An f
// that core.Fairness.Check refuses for the configured limit is an
// ErrInvalidArgument error and changes nothing; reserves that add up to
// more than a limit stored since are honoured level by level, from level
// 0, until they add up to it.
func (s *Semaphore) SetFairness(ctx context.Context, f core.Fairness) error {
	if err := f.Check(s.limit); err != nil {
		return err
	}
	if _, err := s.run(ctx, scriptSetFair, s.limit, encodeFairness(f)); err != nil {
		err = unavailable("set fairness", s.name, err)
		s.b.report(s.label, err)
		return err
	}
	return nil
}

// flowArgs returns the acquire script's arguments of a call with a flow or
// a level (flow, level, hand, fairness), or nil for one with neither.
func (s *Semaphore) flowArgs(a acquireSpec) []any {
	if a.flow == "" && a.level == 0 {
		return nil
	}
	hand := fair.Hand(a.flow, fair.Queues, fair.HandSize)
	var b strings.Builder
	for i, q := range hand {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(q))
	}
	return []any{a.flow, a.level, b.String(), s.fairEnc}
}

// The note of a waiter at a level that SetFairness removed.
const noteLevelGone = -3

// codeLevel: the acquire script's code for a level at or above the number
// of levels in force (the reply's value).
const codeLevel = -5

func levelError(level int, levels int64, name string) error {
	return invalid("level %d is not below the %d priority levels of %q", level, levels, name)
}

// parseLevels reads stats.lua's levels: held and waiting per level, then
// the number of queues with waiters.
func parseLevels(st *core.Stats, v []any) error {
	if len(v) != 2*core.MaxLevels+1 {
		return fmt.Errorf("redissem: unexpected levels of %d elements", len(v))
	}
	for l := range core.MaxLevels {
		st.Levels[l].InUse, _ = v[2*l].(int64)
		st.Levels[l].Waiting, _ = v[2*l+1].(int64)
	}
	st.Backlogged, _ = v[2*core.MaxLevels].(int64)
	return nil
}

// parseFairMember reads a member of the flows' queues,
// 'f<level>:<queue>:<#flow>:<flow>' + a member of W (lib_fair.lua).
func parseFairMember(m string) (core.Waiter, bool) {
	f := strings.SplitN(strings.TrimPrefix(m, "f"), ":", 4)
	if len(f) != 4 || !strings.HasPrefix(m, "f") {
		return core.Waiter{}, false
	}
	l, err1 := strconv.Atoi(f[0])
	n, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || n < 0 || n > len(f[3]) {
		return core.Waiter{}, false
	}
	w, ok := parseMember(f[3][n:])
	w.Flow, w.Level = f[3][:n], l
	return w, ok
}
