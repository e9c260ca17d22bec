module github.com/distsem/distsem/core/otelsem

go 1.25.0

// Every module of this repository resolves from this checkout (go.work does
// the same in workspace mode); released versions are tagged <dir>/vX.Y.Z.
replace (
	github.com/distsem/distsem => ../..
	github.com/distsem/distsem/core/admit/promadmit => ../admit/promadmit
	github.com/distsem/distsem/core/promsem => ../promsem
	github.com/distsem/distsem/echomw => ../../echomw
	github.com/distsem/distsem/grpcmw => ../../grpcmw
	github.com/distsem/distsem/sqlmw => ../../sqlmw
)

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/distsem/distsem v0.0.0
	github.com/redis/go-redis/v9 v9.22.0
	go.opentelemetry.io/otel v1.46.0
	go.opentelemetry.io/otel/metric v1.46.0
	go.opentelemetry.io/otel/sdk v1.46.0
	go.opentelemetry.io/otel/sdk/metric v1.46.0
	go.opentelemetry.io/otel/trace v1.46.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
