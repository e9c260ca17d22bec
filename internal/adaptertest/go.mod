module github.com/distsem/distsem/internal/adaptertest

go 1.25.0

require (
	github.com/distsem/distsem v0.0.0
	github.com/distsem/distsem/echomw v0.0.0
	github.com/distsem/distsem/grpcmw v0.0.0
	github.com/distsem/distsem/sqlmw v0.0.0
	github.com/labstack/echo/v4 v4.16.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1
	google.golang.org/grpc v1.84.0
)

require (
	github.com/labstack/gommon v0.5.0 // indirect
	github.com/mattn/go-colorable v0.1.15 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ngrok/sqlmw v0.0.0-20220520173518-97c9c04efc79 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fasttemplate v1.2.2 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

// Every module of this repository resolves from this checkout (go.work does
// the same in workspace mode); released versions are tagged <dir>/vX.Y.Z.
replace (
	github.com/distsem/distsem => ../..
	github.com/distsem/distsem/core/admit/promadmit => ../../core/admit/promadmit
	github.com/distsem/distsem/core/promsem => ../../core/promsem
	github.com/distsem/distsem/echomw => ../../echomw
	github.com/distsem/distsem/grpcmw => ../../grpcmw
	github.com/distsem/distsem/sqlmw => ../../sqlmw
)
