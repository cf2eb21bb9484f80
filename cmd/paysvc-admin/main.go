// Command paysvc-admin is the admin command line (the specification's
// "management console"): it provisions merchants, sites, API keys and
// webhook subscriptions in the store the service is configured with.
// Run `paysvc-admin -h` for the commands; see package admincli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/yp/paysvc/shared/admincli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := admincli.Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
