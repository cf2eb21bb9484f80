package eventreplay

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
)

// DefaultAddr is the local server's address when PAYSVC_ADDR is unset
// (shared/config).
const DefaultAddr = "127.0.0.1:3000"

// Run is the paysvc-event command: it sends the event file named in args
// and prints the answer to stdout. getenv reads PAYSVC_ADDR, the server's
// address, unless -url is given. It returns the exit code: 0 sent (whatever
// the answer's status), 1 failed, 2 usage.
func Run(ctx context.Context, args []string, getenv func(string) string, client *http.Client, stdout, stderr io.Writer) int {
	addr := getenv("PAYSVC_ADDR")
	if addr == "" {
		addr = DefaultAddr
	}
	fs := flag.NewFlagSet("paysvc-event", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	fs.StringVar(&o.BaseURL, "url", BaseURL(addr), "the local server's base URL (default from PAYSVC_ADDR)")
	fs.StringVar(&o.PSP, "psp", "", "replace the events' demo payment "+DemoPSP+" with this pspReference (path, query, headers, body)")
	fs.BoolVar(&o.KeepIdempotencyKey, "keep-key", false, "send the event file's own Idempotency-Key (the server replays its stored answer) instead of a fresh one")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: paysvc-event [-url URL] [-psp PSP] [-keep-key] EVENT_FILE\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	raw, err := os.ReadFile(fs.Arg(0))
	if err == nil {
		var res Result
		if res, err = Send(ctx, client, raw, o); err == nil {
			res.Print(stdout)
			return 0
		}
	}
	fmt.Fprintln(stderr, "paysvc-event:", err)
	return 1
}
