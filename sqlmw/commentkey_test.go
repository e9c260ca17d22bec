package sqlmw_test

import (
	"context"
	"strings"
	"testing"

	"github.com/distsem/distsem/sqlmw"
)

// TestCommentKeyHostile: tags that are not real block comments are not
// keys, and keys are bounded.
func TestCommentKeyHostile(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 1<<20)
	for _, tc := range []struct{ query, want string }{
		{`SELECT "/* distsem:x */" FROM t`, ""},
		{`SELECT "a""/* distsem:x */" FROM t`, ""},
		{"SELECT `/* distsem:x */` FROM t", ""},
		{"SELECT 1 -- /* distsem:x */", ""},
		{"SELECT 1 -- note\n/* distsem:y */", "y"},
		{"SELECT 1 # /* distsem:x */\n", ""},
		{"SELECT $$ /* distsem:x */ $$", ""},
		{"SELECT $q$ $$ /* distsem:x */ $q$", ""},
		{"SELECT $q$ a $q$ /* distsem:y */", "y"},
		{"SELECT $1, 'a''b' /* distsem:y */", "y"},
		{"SELECT 'it''s' /* distsem:y */", "y"},
		{`SELECT E'\' /* distsem:x */ '`, ""},
		{`SELECT E'\\' /* distsem:y */`, "y"},
		{`SELECT 'a\' /* distsem:x */ '`, ""}, // MySQL: one literal; PostgreSQL: a tag
		{"/* distsem:y */ SELECT 'a\\'", "y"},
		{"/* /* distsem:x */ */ SELECT 1", ""},
		{"/* distsem:" + long + " */ SELECT 1", ""},
		{"/* distsem:a b */ SELECT 1", ""},
		{"/* distsem:" + strings.Repeat("k", sqlmw.MaxCommentKeyLen) + " */", strings.Repeat("k", sqlmw.MaxCommentKeyLen)},
		{"/* distsem:tenant/eu-1:reports.v2 */", "tenant/eu-1:reports.v2"},
		{"SELECT 'unterminated /* distsem:x */", ""},
	} {
		got := sqlmw.CommentKey(context.Background(), tc.query)
		if got != tc.want {
			t.Errorf("CommentKey(%.80q) = %.80q, want %q", tc.query, got, tc.want)
		}
	}
}

// FuzzCommentKey checks CommentKey on arbitrary queries: it never panics,
// returns a bounded key, never reads a tag hidden in a literal, quoted
// identifier, dollar-quoted string or line comment, and finds a tag placed
// before or after such a token. Run longer with
//
//	go test -run '^$' -fuzz '^FuzzCommentKey$' -fuzztime 10m ./sqlmw/
func FuzzCommentKey(f *testing.F) {
	for _, s := range []string{"/* distsem:x */", "a'b", `a"b`, "$$", "$q$", "--", "\n", `\`, "/*", "*/", "`"} {
		f.Add(s, "k")
	}
	f.Fuzz(func(t *testing.T, s, key string) {
		ctx := context.Background()
		got := sqlmw.CommentKey(ctx, s)
		if len(got) > sqlmw.MaxCommentKeyLen || got != "" && sqlmw.CommentKey(ctx, "/* distsem:"+got+" */") != got {
			t.Fatalf("CommentKey(%q) = %q: not a valid key", s, got)
		}
		dq := func(q string) string { return strings.ReplaceAll(s, q, q+q) }
		hidden := []string{
			"SELECT '" + dq("'") + "'",
			`SELECT "` + dq(`"`) + `"`,
			"SELECT `" + dq("`") + "`",
			"SELECT E'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'",
		}
		if !strings.ContainsAny(s, "\r\n") {
			hidden = append(hidden, "SELECT 1 -- "+s, "SELECT 1 # "+s)
		}
		if !strings.Contains(s, "$z$") {
			hidden = append(hidden, "SELECT $z$"+s+"$z$")
		}
		for _, q := range hidden {
			if got := sqlmw.CommentKey(ctx, q); got != "" {
				t.Fatalf("CommentKey(%q) = %q: read a tag out of a literal or line comment", q, got)
			}
		}
		if strings.Contains(key, "*/") {
			return // it would end the comment: the tag is what precedes it
		}
		k := sqlmw.CommentKey(ctx, "/* distsem:"+key+" */")
		if k == "" {
			return // not a valid key
		}
		if k != strings.TrimSpace(key) {
			t.Fatalf("key %q read as %q", key, k)
		}
		if got := sqlmw.CommentKey(ctx, "/* distsem:"+key+" */ "+s); got != k {
			t.Fatalf("leading tag %q followed by %q: got %q", key, s, got)
		}
		if strings.ContainsRune(s, '\\') {
			return // an ambiguous literal ends the search
		}
		for _, q := range hidden[:3] {
			if got := sqlmw.CommentKey(ctx, q+" /* distsem:"+key+" */"); got != k {
				t.Fatalf("tag after %q: got %q, want %q", q, got, k)
			}
		}
	})
}
