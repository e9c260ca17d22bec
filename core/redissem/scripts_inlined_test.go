package redissem

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestScriptsInlined checks that no call of inline.lua's macros is left
// in the scripts redissem sends, and that each of them is used. With
// DISTSEM_LUA_OUT=dir it also writes the acquire and release scripts there
// (acquire.lua, release.lua; general_*.lua without the fast paths; the
// prelude with its constants and clock, prelude.lua, and the bodies alone,
// body_*.lua), as bench/luacost measures them.
func TestScriptsInlined(t *testing.T) {
	all := ""
	for _, s := range []string{scriptSource(luaFastAcquire, luaAcquire), scriptSource(luaFastRelease, luaRelease),
		scriptSource("", luaHeartbeat), scriptSource("", luaSetLimit), scriptSource("", luaStats)} {
		all += s
	}
	users := luaState + luaFastAcquire + luaFastRelease + luaLib + luaAcquire + luaRelease + luaHeartbeat + luaSetLimit + luaStats
	for _, m := range luaMacros {
		users += m.body
	}
	for name := range luaMacros {
		call := regexp.MustCompile(`\b` + name + `\(`)
		if call.MatchString(all) {
			t.Errorf("%s( is left in a script", name)
		}
		if !call.MatchString(users) {
			t.Errorf("%s is never used", name)
		}
	}
	dir := os.Getenv("DISTSEM_LUA_OUT")
	if dir == "" {
		return
	}
	files := map[string]string{
		"acquire.lua":         scriptSource(luaFastAcquire, luaAcquire),
		"release.lua":         scriptSource(luaFastRelease, luaRelease),
		"general_acquire.lua": inline(luaConst + luaHead + luaState + luaLib + luaAcquire),
		"general_release.lua": inline(luaConst + luaHead + luaState + luaLib + luaRelease),
		"prelude.lua":         inline(luaConst + luaHead + luaLib),
		"body_acquire.lua":    inline(luaAcquire),
		"body_release.lua":    inline(luaRelease),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
