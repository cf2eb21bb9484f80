// Command paysvc-event sends a sample API Gateway event of events/ to a
// running local server (make run) and prints the answer:
//
//	go run ./cmd/paysvc-event events/payments.json
//	go run ./cmd/paysvc-event -psp <pspReference> events/captures.json
//
// Start make run with PAYSVC_SEED_FILE=events/seed.json so the events' API
// key and tenant exist (events/README.md says what each event needs).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/yp/paysvc/shared/eventreplay"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:3000", "the local server's base URL")
	psp := flag.String("psp", "", "replace the events' demo payment "+eventreplay.DemoPSP+" with this pspReference")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: paysvc-event [-url URL] [-psp PSP] EVENT_FILE\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	raw, err := os.ReadFile(flag.Arg(0))
	if err == nil {
		var status int
		var body []byte
		status, body, err = eventreplay.Send(context.Background(), &http.Client{Timeout: 30 * time.Second}, *base, raw, *psp)
		if err == nil {
			fmt.Printf("HTTP %d\n%s\n", status, body)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "paysvc-event:", err)
	os.Exit(1)
}
