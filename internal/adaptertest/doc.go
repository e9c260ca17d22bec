// Package adaptertest holds only tests: a table test that runs httpmw,
// grpcmw, echomw and sqlmw through the same cases of the option vocabulary
// documented in core/admit. It is a module of its own so that the four
// adapters' dependencies (grpc, echo, ngrok/sqlmw) stay out of the module
// graph of core/admit and httpmw, which are in the root module.
package adaptertest
