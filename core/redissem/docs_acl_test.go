package redissem_test

import (
	"os"
	"strings"
	"testing"
)

// TestACLDocumented checks that docs/OPERATIONS.md gives the minimum ACL
// that the tests grant: aclCommands in its ACL SETUSER line, and
// aclClusterCommands for a Cluster client.
func TestACLDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/OPERATIONS.md")
	ok(t, err)
	var setuser string
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.Contains(line, "ACL SETUSER") {
			setuser = line
		}
	}
	if !strings.HasSuffix(setuser, " -@all "+aclCommands) {
		t.Errorf("docs/OPERATIONS.md: the ACL SETUSER line %q does not end with -@all and the rights of aclCommands:\n%s", setuser, aclCommands)
	}
	if !strings.Contains(string(doc), "`"+aclClusterCommands+"`") {
		t.Errorf("docs/OPERATIONS.md does not give the Cluster rights `%s`", aclClusterCommands)
	}
}
