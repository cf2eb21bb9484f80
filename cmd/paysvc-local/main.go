// Command paysvc-local runs the whole service on one machine: every route of
// every function on one HTTP server, the embedded store in .paysvc/ and the
// upstream simulated in-process. Running it: docs/local.md; configuration:
// docs/configuration.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/yp/paysvc/shared/localserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := localserver.Run(ctx, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "paysvc-local:", err)
		os.Exit(1)
	}
}
