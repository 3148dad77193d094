// Command admit runs waitlists and controlled early access from one binary.
//
//	admit [--env-file FILE]... COMMAND             first add FILE's variables (as systemd's EnvironmentFile=)
//	admit [serve]                                  run the server (default)
//	admit owner add|remove|list --workspace NAME [--user USER_ID | --email ADDRESS [--name NAME]]
//	admit migrate [-status]                        apply database migrations and exit, or list them
//	admit restore [-timestamp T | -txid N] -o PATH restore the backup named in litestream.yml
//	admit version                                  print the build's version, commit and Go toolchain
//	admit backup verify                            restore drill: compare a restore with the live database
//	admit config                                   print the effective configuration, secrets hidden
//
// The commands live in internal/cli (docs/ARCHITECTURE.md#packages).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"admit/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
