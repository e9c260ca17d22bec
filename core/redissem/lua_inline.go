package redissem

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// What the scripts' fast paths and the prelude share is written once, in
// lua/inline.lua, as upper-case Lua functions, and put in place of their
// calls when the scripts are built: a real Lua function would cost its
// definition on every EVALSHA. An expression is a one-line function
// "return body"; a block is a function of several lines, whose call is a
// statement and becomes "do body end", so that what it assigns to a
// parameter is assigned to the caller's variable (or field) given there.

// A luaMacro is one of inline.lua's definitions.
type luaMacro struct {
	params []string
	body   string
	block  bool // a block of statements, not an expression
}

var (
	macroExpr  = regexp.MustCompile(`^local function ([A-Z][A-Z0-9_]*)\(([^)]*)\) return (.*) end$`)
	macroBlock = regexp.MustCompile(`^local function ([A-Z][A-Z0-9_]*)\(([^)]*)\)$`)
)

// parseMacros reads inline.lua: comments, blank lines, one-line
// definitions "local function NAME(params) return body end", and blocks:
// "local function NAME(params)", the body, and "end" alone at the start of
// a line.
func parseMacros(src string) map[string]luaMacro {
	ms := make(map[string]luaMacro)
	var open string // the block being read
	var body strings.Builder
	for line := range strings.Lines(src) {
		if open != "" {
			if strings.TrimRight(line, "\n") == "end" {
				m := ms[open]
				m.body = body.String()
				ms[open] = m
				open = ""
				body.Reset()
			} else {
				body.WriteString(line)
			}
			continue
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "--") {
			continue
		}
		m := macroExpr.FindStringSubmatch(line)
		block := false
		if m == nil {
			if m = macroBlock.FindStringSubmatch(line); m == nil {
				panic("redissem: lua/inline.lua: not an upper-case function: " + line)
			}
			block, open = true, m[1]
		}
		var params []string
		for p := range strings.SplitSeq(m[2], ",") {
			if p = strings.TrimSpace(p); p != "" {
				params = append(params, p)
			}
		}
		ms[m[1]] = luaMacro{params: params, body: m[len(m)-1], block: block}
	}
	if open != "" {
		panic("redissem: lua/inline.lua: " + open + " has no end")
	}
	return ms
}

// inline replaces every call of a macro of inline.lua in src (outside
// comments and strings) by the macro's body, with the arguments in place of
// the parameters, and the calls in that body by theirs in turn, in one
// pass over src.
func inline(src string) string { return expand(src, luaMacros, 0) }

// expand is inline with the macros ms, at depth levels of macros within
// macros.
func expand(src string, ms map[string]luaMacro, depth int) string {
	if depth > 8 {
		panic("redissem: lua/inline.lua: macros nested too deep")
	}
	return scanLua(src, func(name, rest string) (string, int) {
		if name[0] < 'A' || name[0] > 'Z' || !strings.HasPrefix(rest, "(") {
			return name, 0 // not a macro's call: macros are upper-case
		}
		m, ok := ms[name]
		if !ok {
			return name, 0
		}
		args, used := luaArgs(rest)
		if len(args) != len(m.params) {
			panic(fmt.Sprintf("redissem: %s takes %d arguments, not %d", name, len(m.params), len(args)))
		}
		body := scanLua(m.body, func(id, _ string) (string, int) {
			for i, p := range m.params {
				if id == p {
					return args[i], 0
				}
			}
			return id, 0
		})
		body = expand(body, ms, depth+1)
		if m.block {
			body = "do\n" + body + "end"
		}
		return body, used
	})
}

// scanLua copies src, passing each name (outside comments and strings, and
// not a field after '.') to f with the text after it; f returns the text to
// write instead and how many bytes of the rest it took.
func scanLua(src string, f func(name, rest string) (string, int)) string {
	var b strings.Builder
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case strings.HasPrefix(src[i:], "--"):
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				j = len(src) - i
			}
			b.WriteString(src[i : i+j])
			i += j
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(src))
			b.WriteString(src[i:j])
			i = j
		case c == '_' || unicode.IsLetter(rune(c)):
			j := i
			for j < len(src) && (src[j] == '_' || unicode.IsLetter(rune(src[j])) || unicode.IsDigit(rune(src[j]))) {
				j++
			}
			if i > 0 && src[i-1] == '.' && (i < 2 || src[i-2] != '.') {
				b.WriteString(src[i:j]) // a field: t.name
				i = j
				continue
			}
			out, used := f(src[i:j], src[j:])
			b.WriteString(out)
			i = j + used
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (src[j] == '.' || src[j] == '_' || unicode.IsLetter(rune(src[j])) || unicode.IsDigit(rune(src[j]))) {
				j++
			}
			b.WriteString(src[i:j]) // a number: 1e14
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

var plainArg = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*|\[[A-Za-z0-9_]+\])*|[0-9]+|'[^'\\]*')$`)

// luaArgs splits the argument list at the start of s, "(a, b)", and returns
// the arguments (in parentheses unless a name, a number or a plain string)
// and the length of the list.
func luaArgs(s string) ([]string, int) {
	var args []string
	depth, start := 0, 1
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				if a := strings.TrimSpace(s[start:i]); a != "" || len(args) > 0 {
					args = append(args, a)
				}
				for k, a := range args {
					if !plainArg.MatchString(a) {
						args[k] = "(" + a + ")"
					}
				}
				return args, i + 1
			}
		case ',':
			if depth == 1 {
				args = append(args, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		case '\'', '"':
			for i++; i < len(s) && s[i] != c; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		}
	}
	panic("redissem: unbalanced macro call: " + s[:min(len(s), 60)])
}
