// Command paysvc-event sends a sample API Gateway event of events/ to a
// running local server (make run, at PAYSVC_ADDR) and prints the answer:
//
//	go run ./cmd/paysvc-event events/payments.json
//	go run ./cmd/paysvc-event -psp <pspReference> events/captures.json
//
// Each send is a new call with a fresh Idempotency-Key; -keep-key sends the
// file's own key (the server then replays its stored answer, and the
// command prints Idempotent-Replayed). Start make run with
// PAYSVC_SEED_FILE=events/seed.json so the events' API key and tenant exist
// (events/README.md says what each event needs). See package eventreplay.
package main

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/yp/paysvc/shared/eventreplay"
)

func main() {
	os.Exit(eventreplay.Run(context.Background(), os.Args[1:], os.Getenv, &http.Client{Timeout: 30 * time.Second}, os.Stdout, os.Stderr))
}
