package redissem

import (
	"strings"
	"testing"
)

// TestInlineExpandsNestedMacros: a macro's call is replaced by its body
// with the arguments in place (parenthesized unless plain), a call within
// that body or within an argument is replaced in turn, a block becomes
// do ... end, and names in comments, strings and fields are left alone.
// Macros nested deeper than the limit panic.
func TestInlineExpandsNestedMacros(t *testing.T) {
	ms := parseMacros(`-- test macros
local function TWICE(x) return x * 2 end
local function QUAD(x) return TWICE(TWICE(x)) end
local function SET(v, x)
  v = QUAD(x)
end
`)
	src := "local a = QUAD(n + 1) -- QUAD(n)\nlocal s = 'TWICE(1)'\nSET(t.v, TWICE(2))\nlocal f = t.TWICE\n"
	want := "local a = (((n + 1)) * 2) * 2 -- QUAD(n)\nlocal s = 'TWICE(1)'\ndo\n  t.v = ((((2 * 2))) * 2) * 2\nend\nlocal f = t.TWICE\n"
	if got := expand(src, ms, 0); got != want {
		t.Fatalf("expand:\n%s\nwant:\n%s", got, want)
	}

	deep := parseMacros("local function LOOP(x) return LOOP(x) end\n")
	defer func() {
		if r, _ := recover().(string); !strings.Contains(r, "nested too deep") {
			t.Fatalf("a macro that calls itself: recovered %q, want a panic that says nested too deep", r)
		}
	}()
	expand("LOOP(1)", deep, 0)
}
