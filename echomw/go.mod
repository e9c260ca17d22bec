module github.com/distsem/distsem/echomw

go 1.25.0

require (
	github.com/distsem/distsem v0.0.0
	github.com/labstack/echo/v4 v4.16.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/labstack/gommon v0.5.0 // indirect
	github.com/mattn/go-colorable v0.1.15 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/redis/go-redis/v9 v9.22.0 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fasttemplate v1.2.2 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)

// Every module of this repository resolves from this checkout (go.work does
// the same in workspace mode); released versions are tagged <dir>/vX.Y.Z.
replace (
	github.com/distsem/distsem => ..
	github.com/distsem/distsem/core/admit/promadmit => ../core/admit/promadmit
	github.com/distsem/distsem/core/promsem => ../core/promsem
	github.com/distsem/distsem/grpcmw => ../grpcmw
	github.com/distsem/distsem/sqlmw => ../sqlmw
)
