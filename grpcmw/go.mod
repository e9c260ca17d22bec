module github.com/distsem/distsem/grpcmw

go 1.25.0

require (
	github.com/distsem/distsem v0.0.0
	go.uber.org/goleak v1.3.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1
	google.golang.org/grpc v1.84.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/redis/go-redis/v9 v9.22.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

// Every module of this repository resolves from this checkout (go.work does
// the same in workspace mode); released versions are tagged <dir>/vX.Y.Z.
replace (
	github.com/distsem/distsem => ..
	github.com/distsem/distsem/core/admit/promadmit => ../core/admit/promadmit
	github.com/distsem/distsem/core/promsem => ../core/promsem
	github.com/distsem/distsem/echomw => ../echomw
	github.com/distsem/distsem/sqlmw => ../sqlmw
)
