package servertest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// pgScript runs as the postgres user (or as this user when not root): it
// makes a cluster in $2/data, starts postgres on 127.0.0.1:$3, prints
// postgres's pid, then waits for its stdin to close — which happens when
// the test binary exits, however it exits — and stops postgres (immediate
// shutdown) and removes $2. It is not killed with its parent, so that it
// can clean up. The caller learns that postgres is ready from its log.
const pgScript = `bin=$1 dir=$2 port=$3
exec 2>>"$dir/setup.log"
"$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale >>"$dir/setup.log" || exit 1
"$bin/postgres" -D "$dir/data" -p "$port" -c listen_addresses=127.0.0.1 \
	-c unix_socket_directories="$dir" -c fsync=off -c synchronous_commit=off \
	-c full_page_writes=off -c max_connections=200 >>"$dir/pg.log" 2>&1 </dev/null &
pg=$!
echo "$pg"
cat >/dev/null
kill -QUIT "$pg"
wait "$pg"
cd / && rm -rf "$dir"
`

// pgReady is what postgres logs once it accepts connections.
const pgReady = "database system is ready to accept connections"

// pgProc is a PostgreSQL cluster that this test binary started.
type pgProc struct {
	dir      string
	port     int
	p        *proc
	lifeline *os.File // closing it makes pgScript stop postgres
}

func (g *pgProc) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", g.port)
}

// startPostgres makes a scratch cluster and starts PostgreSQL on a free
// loopback port. It takes a second or two (initdb).
func startPostgres() (*pgProc, error) {
	if !autostartSupported {
		return nil, fmt.Errorf("postgres: %w (%v)", errNotInstalled, errUnsupportedOS)
	}
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	cred, uid, gid, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	var last error
	for range 3 {
		g, err := tryPostgres(bin, cred, uid, gid)
		if err == nil {
			return g, nil
		}
		last = err
	}
	return nil, last
}

func tryPostgres(bin string, cred credential, uid, gid int) (*pgProc, error) {
	dir, err := os.MkdirTemp("", "distsem-pg-")
	if err != nil {
		return nil, err
	}
	if uid >= 0 {
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	port, err := freePort(false)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		unreserve(port)
		os.RemoveAll(dir)
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		lifeR.Close()
		lifeW.Close()
		unreserve(port)
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", pgScript, "sh", bin, dir, strconv.Itoa(port))
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout = lifeR, outW
	p, err := startProc(cmd, 0, cred)
	lifeR.Close()
	outW.Close()
	g := &pgProc{dir: dir, port: port, p: p, lifeline: lifeW}
	if err != nil {
		outR.Close()
		lifeW.Close()
		unreserve(port)
		os.RemoveAll(dir)
		return nil, err
	}
	// initdb and the start of postgres: generous, for a loaded CI machine.
	const budget = 2 * time.Minute
	deadline := time.Now().Add(budget)
	_ = outR.SetReadDeadline(deadline)
	line, err := bufio.NewReader(outR).ReadString('\n')
	outR.Close()
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err == nil && perr == nil {
		err = waitLog(pid, func() bool { return processExists(pid) }, filepath.Join(dir, "pg.log"), 0, pgReady, time.Until(deadline))
	} else if err == nil {
		err = perr
	}
	if err != nil {
		msg := tail(filepath.Join(dir, "setup.log")) + " | " + tail(filepath.Join(dir, "pg.log"))
		g.stop()
		return nil, fmt.Errorf("postgres on port %d did not start (%v): %s", port, err, msg)
	}
	return g, nil
}

// stop makes pgScript stop postgres and remove its directory, and waits
// for that (killing its process group after 30 seconds).
func (g *pgProc) stop() {
	if g.lifeline == nil {
		return
	}
	g.lifeline.Close()
	g.lifeline = nil
	if g.p != nil {
		g.p.waitOrKillGroup(30 * time.Second)
	}
	os.RemoveAll(g.dir)
	unreserve(g.port) // once: lifeline is nil from now on
}

// postgresBin returns the directory of the postgres and initdb binaries:
// the one on PATH, else the newest /usr/lib/postgresql/*/bin (Debian).
func postgresBin() (string, error) {
	if p, err := exec.LookPath("postgres"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("postgres and initdb %w (on PATH or in /usr/lib/postgresql/*/bin)", errNotInstalled)
}

func pgVersion(bin string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(bin)), 64)
	return v
}

func lookupUser(name string) (uid, gid int, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, err
	}
	if uid, err = strconv.Atoi(u.Uid); err != nil {
		return 0, 0, err
	}
	gid, err = strconv.Atoi(u.Gid)
	return uid, gid, err
}
