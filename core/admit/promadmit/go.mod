module github.com/distsem/distsem/core/admit/promadmit

go 1.25.0

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/distsem/distsem v0.0.0
	github.com/prometheus/client_golang v1.24.1
	github.com/redis/go-redis/v9 v9.22.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.71.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

// Every module of this repository resolves from this checkout (go.work does
// the same in workspace mode); released versions are tagged <dir>/vX.Y.Z.
replace (
	github.com/distsem/distsem => ../../..
	github.com/distsem/distsem/core/promsem => ../../promsem
	github.com/distsem/distsem/echomw => ../../../echomw
	github.com/distsem/distsem/grpcmw => ../../../grpcmw
	github.com/distsem/distsem/sqlmw => ../../../sqlmw
)
