package redissem

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

// Every decision is one Lua script: the constants (lua/const.lua), the
// clock (lua/head.lua), the shared prelude (lua/lib*.lua) and the script's
// own body. go-redis runs them with EVALSHA and falls back to EVAL when the
// server does not have the script yet. The two scripts of the busy path
// read their state first (lua/state.lua) and have fast paths
// (lua/fast_*.lua) before the prelude, which return before it runs in the
// common cases. Every decision and count that the fast paths and the
// prelude share is written once, in lua/inline.lua, and put in place by
// inline.
var (
	//go:embed lua/const.lua
	luaConst string
	//go:embed lua/head.lua
	luaHead string
	//go:embed lua/state.lua
	luaState string
	//go:embed lua/inline.lua
	luaInline string
	//go:embed lua/lib.lua
	luaLibBusy string
	//go:embed lua/lib_handoff.lua
	luaLibHandoff string
	//go:embed lua/lib_fair.lua
	luaLibFair string
	//go:embed lua/lib_rare.lua
	luaLibRare string
	luaLib     = luaLibBusy + luaLibHandoff + luaLibFair + luaLibRare
	//go:embed lua/fast_acquire.lua
	luaFastAcquire string
	//go:embed lua/fast_release.lua
	luaFastRelease string
	//go:embed lua/acquire.lua
	luaAcquire string
	//go:embed lua/release.lua
	luaRelease string
	//go:embed lua/heartbeat.lua
	luaHeartbeat string
	//go:embed lua/setlimit.lua
	luaSetLimit string
	//go:embed lua/stats.lua
	luaStats string
	//go:embed lua/setfair.lua
	luaSetFair string
	//go:embed lua/rights.lua
	luaRights string
	//go:embed lua/inspect.lua
	luaInspect string
	//go:embed lua/reassert.lua
	luaReassert string
	//go:embed lua/confirm.lua
	luaConfirm string

	luaMacros = parseMacros(luaInline)
	// The prelude, which most scripts share, with inline.lua's macros in
	// place: once, not once per script.
	inlinedLib = inline(luaLib)

	scriptRights    = newScript(luaRights)
	scriptAcquire   = newScript(scriptSource(luaFastAcquire, luaAcquire))
	scriptRelease   = newScript(scriptSource(luaFastRelease, luaRelease))
	scriptHeartbeat = newScript(scriptSource("", luaHeartbeat))
	scriptSetLimit  = newScript(scriptSource("", luaSetLimit))
	scriptStats     = newScript(scriptSource("", luaStats))
	scriptSetFair   = newScript(scriptSource("", luaSetFair))
	scriptReassert  = newScript(scriptSource("", luaReassert))
	scriptConfirm   = newScript(luaConfirm)                              // WithReplicaAck's (redis_ack.go): not on the prelude
	scriptInspect   = newScript(inline(luaConst + luaHead + luaInspect)) // read-only: not on the prelude
)

// scriptSource is a script's text: the constants, the clock, with fast
// paths the state read and the fast paths, then the prelude and the body,
// with inline.lua's expressions in place.
func scriptSource(fast, body string) string {
	if fast == "" {
		return inline(luaConst+luaHead) + inlinedLib + inline(body)
	}
	return inline(luaConst+luaHead+luaState+fast) + inlinedLib + inline(body)
}

// reply is the common shape {code, value, limit, notes, now_us[, again[, deaf[, lone[, levels]]]]}
// of every script's answer. heartbeat.lua puts the list of lost holder ids
// first. again = 1: the script had already run for this id, so an earlier
// reply (and the grants it carried) was lost.
type reply struct {
	code, value, limit, nowUS int64
	again                     bool
	deaf                      bool // nobody heard this process's channel there
	lone                      bool // the state was made afresh: this process has no owner record there
	lost                      []string
	notes                     []grantNote
	levels                    []any      // stats.lua's levels (redis_fair.go)
	held                      []heldNote // notes to publish once acknowledged (WithReplicaAck)
}

// The codes of the scripts' replies: reply.code of acquire.lua and
// release.lua, reply.value of adopt.lua.
const (
	codeNone     = 0  // acquire: no permit (TryAcquire); release: not held; adopt: not held
	codeGranted  = 1  // acquire: granted; release: released; adopt: adopted
	codeQueued   = 2  // acquire: queued; release: taken out of the queue
	codeTooHeavy = -1 // acquire: the weight exceeds the limit
	codeLate     = -3 // the request reached Redis after its deadline
	codeDone     = -4 // the id was released already: a late copy of its request
)

// The tokens of grant notes that are not grants.
const (
	noteRejected = -1 // heavier than the limit, lowered since it queued
	noteEvicted  = -2 // no longer queued
)

// grantNote is a grant (token > 0), a rejection (noteRejected) or an
// eviction (noteEvicted) for one waiter.
type grantNote struct {
	id      string
	token   int64
	grantUS int64 // Redis TIME of the grant, microseconds
}

func parseReply(v []any) (reply, error) {
	var r reply
	if len(v) < 5 || len(v) > 9 {
		return r, fmt.Errorf("redissem: unexpected script reply of %d elements", len(v))
	}
	switch x := v[0].(type) {
	case int64:
		r.code = x
	case []any:
		for _, id := range x {
			s, _ := id.(string)
			r.lost = append(r.lost, s)
		}
	}
	r.value, _ = v[1].(int64)
	r.limit, _ = v[2].(int64)
	r.nowUS, _ = v[4].(int64)
	if len(v) >= 6 {
		a, _ := v[5].(int64)
		r.again = a == 1
	}
	if len(v) >= 7 {
		d, _ := v[6].(int64)
		r.deaf = d == 1
	}
	if len(v) >= 8 {
		l, _ := v[7].(int64)
		r.lone = l == 1
	}
	if len(v) == 9 {
		r.levels, _ = v[8].([]any)
	}
	notes, _ := v[3].([]any)
	if len(notes) > 0 {
		r.notes = make([]grantNote, 0, len(notes))
	}
	for _, n := range notes {
		s, _ := n.(string)
		if strings.HasPrefix(s, ">") {
			if h, ok := parseHeld(s); ok {
				r.held = append(r.held, h)
				continue
			}
		}
		g, err := parseNote(s)
		if err != nil {
			return r, err
		}
		r.notes = append(r.notes, g)
	}
	return r, nil
}

// parseNotes parses a pub/sub payload: notes joined by ','.
func parseNotes(payload string) ([]grantNote, error) {
	parts := strings.Split(payload, ",")
	out := make([]grantNote, 0, len(parts))
	for _, p := range parts {
		g, err := parseNote(p)
		if err != nil {
			return out, err
		}
		out = append(out, g)
	}
	return out, nil
}

// parseNote parses "id:token:time_us".
func parseNote(s string) (grantNote, error) {
	id, rest, ok1 := strings.Cut(s, ":")
	tok, us, ok2 := strings.Cut(rest, ":")
	t, err1 := strconv.ParseInt(tok, 10, 64)
	u, err2 := strconv.ParseInt(us, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return grantNote{}, fmt.Errorf("redissem: malformed grant note %q", s)
	}
	return grantNote{id: id, token: t, grantUS: u}, nil
}
