// Package systemtest holds admit's system tests: they run admit as a
// whole — its commands in-process through internal/cli, or the real
// binary, built once per run of this package from the module root — with
// a real data directory, real listeners on loopback and, where a test
// needs them, a real replica, OpenID Provider or TLS proxy
// (docs/ARCHITECTURE.md#tests). The package has no code of its own.
package systemtest
