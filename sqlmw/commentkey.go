package sqlmw

import (
	"context"
	"strings"
)

// tagPrefix starts the body of a comment that names a key.
const tagPrefix = "distsem:"

// MaxCommentKeyLen is the longest key, in bytes, that CommentKey returns.
const MaxCommentKeyLen = 64

// CommentKey is a classifier for WithKeyed. It returns the key named by the
// first real block comment of the form /* distsem:KEY */ in query (white
// space around KEY is ignored), or "" if there is none.
//
// It reads the query as SQL: a tag inside a string literal ('…', E'…'), a
// quoted identifier ("…" or `…`), a dollar-quoted string ($$…$$,
// $tag$…$tag$) or a line comment (-- or #) is not a tag. Where SQL dialects
// disagree on how a query reads, CommentKey stops and returns "" unless a
// tag came before: at a backslash inside a '…' or "…" literal (an escape in
// MySQL, a plain character in PostgreSQL) and at a block comment with
// "/*" inside (PostgreSQL nests them, MySQL does not); so put the tag
// first. KEY must be 1 to MaxCommentKeyLen bytes of letters, digits and
// ". _ - : /"; a first tag with any other KEY gives "".
//
//	db.QueryContext(ctx, "/* distsem:reports */ SELECT ...")
func CommentKey(_ context.Context, query string) string {
	if !strings.Contains(query, tagPrefix) { // the common case: no tag at all
		return ""
	}
	for i := 0; i < len(query); {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			// E'…' (PostgreSQL escape string): a backslash escapes.
			esc := c == '\'' && i > 0 && (query[i-1] == 'e' || query[i-1] == 'E') && (i < 2 || !identByte(query[i-2]))
			j, ok := endQuoted(query, i+1, c, esc)
			if !ok {
				return ""
			}
			i = j
		case c == '`':
			j := strings.IndexByte(query[i+1:], '`') // `` doubles: two quoted runs
			if j < 0 {
				return ""
			}
			i += j + 2
		case c == '#' || c == '-' && strings.HasPrefix(query[i:], "--"):
			j := strings.IndexAny(query[i:], "\r\n")
			if j < 0 {
				return ""
			}
			i += j + 1
		case c == '$' && (i == 0 || !identByte(query[i-1])):
			tag, ok := dollarTag(query[i:])
			if !ok {
				i++ // a parameter ($1) or an operator
				continue
			}
			j := strings.Index(query[i+len(tag):], tag)
			if j < 0 {
				return ""
			}
			i += len(tag) + j + len(tag)
		case c == '/' && strings.HasPrefix(query[i:], "/*"):
			j := strings.Index(query[i+2:], "*/")
			if j < 0 {
				return ""
			}
			body := query[i+2 : i+2+j]
			if strings.Contains(body, "/*") {
				return "" // nested: dialects disagree where it ends
			}
			if key, ok := strings.CutPrefix(strings.TrimSpace(body), tagPrefix); ok {
				return validKey(strings.TrimSpace(key))
			}
			i += 2 + j + 2
		default:
			i++
		}
	}
	return ""
}

// endQuoted returns the index after the quote that closes a literal or
// identifier opened by q whose body starts at i; a doubled q is part of the
// body. If esc, a backslash escapes the next byte; otherwise a backslash
// makes the query ambiguous and ok is false, as is an unterminated literal.
func endQuoted(s string, i int, q byte, esc bool) (int, bool) {
	for i < len(s) {
		switch s[i] {
		case q:
			if i+1 < len(s) && s[i+1] == q {
				i += 2
				continue
			}
			return i + 1, true
		case '\\':
			if !esc {
				return 0, false
			}
			i += 2
			continue
		}
		i++
	}
	return 0, false
}

// dollarTag returns the opening tag of a dollar-quoted string at the start
// of s ("$$" or "$name$"), if there is one.
func dollarTag(s string) (string, bool) {
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '$':
			return s[:i+1], true
		case c >= '0' && c <= '9':
			if i == 1 {
				return "", false // $1: a parameter
			}
		case !identByte(c):
			return "", false
		}
	}
	return "", false
}

// identByte reports whether c can be part of an identifier (PostgreSQL
// allows '$' after the first byte, and any non-ASCII byte).
func identByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// validKey returns key if it is a valid comment key, else "".
func validKey(key string) string {
	if key == "" || len(key) > MaxCommentKeyLen {
		return ""
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-:/", c) >= 0) {
			return ""
		}
	}
	return key
}
