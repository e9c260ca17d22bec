package consul_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/consul"
)

// childEnv makes the test binary a child process that takes a permit and
// then blocks until it is killed: DISTSEM_CONSUL_CHILD=agent address,
// DISTSEM_CONSUL_CHILD_PREFIX=key prefix.
const childEnv = "DISTSEM_CONSUL_CHILD"

func runChild(addr string) int {
	c, err := api.NewClient(&api.Config{Address: addr})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	s := consul.New(c, "kill", 1, core.WithKeyPrefix(os.Getenv(childEnv+"_PREFIX")), core.WithDefaultLeaseTTL(time.Second))
	p, err := s.Acquire(context.Background())
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("held", p.Token())
	select {} // until SIGKILL
}

// A process killed with SIGKILL while it holds a permit gives it back when
// its session expires: the waiter of another process gets it, with a
// larger token.
func TestKilledHolderPermitComesBack(t *testing.T) {
	ctx := background()
	prefix := uniquePrefix()
	s := consul.New(newClient(t), "kill", 1, core.WithKeyPrefix(prefix))
	t.Cleanup(func() { _ = s.Close() })

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"="+agentAddr, childEnv+"_PREFIX="+prefix)
	out, err := child.StdoutPipe()
	ok(t, err)
	ok(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	ok(t, err)
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "held" {
		t.Fatalf("child: %q", line)
	}
	childToken, err := strconv.ParseInt(f[1], 10, 64)
	ok(t, err)
	wantStats(t, s, 1, 0)

	got := make(chan *core.Permit, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		p, err := s.Acquire(wctx)
		if err != nil {
			t.Error(err)
		}
		got <- p
	}()
	waitQueued(t, s, 1)
	ok(t, child.Process.Kill())
	_ = child.Wait()
	p := <-got
	if p == nil {
		t.Fatal("the killed holder's permit never came back")
	}
	if p.Token() <= childToken {
		t.Fatalf("token %d after the killed holder's %d: want larger", p.Token(), childToken)
	}
	ok(t, p.Release(ctx))
	wantStats(t, s, 0, 0)
}
