package tests

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/client"
)

// The client's examples (shared/client/example_test.go, whose // Output:
// lines go test checks) run against the local server (make run, seeded
// with events/seed.json: site_demo and its key) instead of their offline
// stand-in: the same code and the same output against the real service.
// The event history example needs three AUTHORISATION events: three
// payments are made first and the simulator's notifications flushed.
func TestClientExamplesAgainstLocalServer(t *testing.T) {
	const demoKey = "yp_test_demoKey000000000000000000000000000000000000"
	s := startLocal(t, "PAYSVC_DATA_DIR="+t.TempDir(), "PAYSVC_SEED_FILE="+filepath.Join("..", "events", "seed.json"))
	c := client.New(s.base, demoKey, client.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}))
	ctx := context.Background()
	for i := range 3 {
		pay, err := c.CreatePayment(ctx, "site_demo", client.PaymentParams{
			Amount: client.Amount{Value: 1000, Currency: "EUR"}, Reference: fmt.Sprintf("order-hist-%d", i),
			ReturnURL: "https://shop.example/return", PaymentMethod: card("4111111111111111", "737", "")})
		if err != nil || pay.ResultCode != client.ResultAuthorised {
			t.Fatalf("payment %d: %+v %v", i, pay, err)
		}
	}
	// The simulator's test hook, served on the local server's port (not
	// part of the API): it returns once every notification is accepted.
	resp, err := http.Post(s.base+"/_sim/flush", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("flush: %d", resp.StatusCode)
	}

	cmd := exec.Command("go", "test", "-count=1", "-v", "-run", "^Example", ".")
	cmd.Dir = filepath.Join("..", "shared", "client")
	cmd.Env = append(os.Environ(), "PAYSVC_EXAMPLE_URL="+s.base, "PAYSVC_EXAMPLE_KEY="+demoKey)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the examples against the local server: %v\n%s\nserver log:\n%s", err, out, s.outText())
	}
	ran := regexp.MustCompile(`(?m)^--- PASS: (Example\w*)`).FindAllStringSubmatch(string(out), -1)
	var names []string
	for _, m := range ran {
		names = append(names, m[1])
	}
	want := []string{"Example", "ExampleWithIdempotencyKey", "ExampleError", "ExampleClient_AllEvents", "ExampleConstructEvent"}
	for _, n := range want {
		if !slices.Contains(names, n) {
			t.Errorf("%s did not run (ran %v)\n%s", n, names, out)
		}
	}
}
