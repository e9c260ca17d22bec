module github.com/distsem/distsem/sqlmw

go 1.25.0

require (
	github.com/distsem/distsem v0.0.0
	github.com/jackc/pgx/v5 v5.12.0
	github.com/ngrok/sqlmw v0.0.0-20220520173518-97c9c04efc79
	github.com/redis/go-redis/v9 v9.22.0
	go.uber.org/goleak v1.3.0
	modernc.org/sqlite v1.59.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ncruces/go-strftime v1.1.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	modernc.org/libc v1.76.0 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)

// Every module of this repository resolves from this checkout (go.work does
// the same in workspace mode); released versions are tagged <dir>/vX.Y.Z.
replace (
	github.com/distsem/distsem => ..
	github.com/distsem/distsem/core/admit/promadmit => ../core/admit/promadmit
	github.com/distsem/distsem/core/promsem => ../core/promsem
	github.com/distsem/distsem/echomw => ../echomw
	github.com/distsem/distsem/grpcmw => ../grpcmw
)
