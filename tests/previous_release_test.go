package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testutil/moto"
)

// previousRelease is the last commit before payments were ledgers
// (efd3d4a's parent): the release a stack runs before the bridge.
const previousRelease = "3b1e601e6e0f2cedc73ebae1cd85ccbdf8c54de1"

// prevReleaseMain is a command built inside the previous release's tree: it
// reads and writes one payment through that release's own DynamoDB store
// (its item format, its conditions), as its functions do.
//
//	prev <endpoint> <region> <table> get <psp>    the payment as JSON
//	prev <endpoint> <region> <table> reserve <psp> <op> <value> <at RFC 3339>
//	                                              a capture's reservation, saved
//	                                              (as its capture does before the call)
const prevReleaseMain = `package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/dynamo"
)

func main() {
	a := os.Args[1:]
	region := a[1]
	a = append(a[:1], a[2:]...)
	client := dynamodb.New(dynamodb.Options{BaseEndpoint: aws.String(a[0]), Region: region,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	at, _ := time.Parse(time.RFC3339, a[len(a)-1])
	st := dynamo.New(client, a[1], clock.NewFake(at))
	ctx := context.Background()
	p, err := st.GetPayment(ctx, a[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if a[2] == "reserve" {
		v, _ := strconv.ParseInt(a[5], 10, 64)
		if p.Reservations == nil {
			p.Reservations = map[string]int64{}
		}
		p.Reservations[a[4]] = v
		p.History = append(p.History, payments.Event{At: at, Kind: "capture-requested", Origin: "api", PSPReference: a[4]})
		p.Version, p.UpdatedAt = p.Version+1, at
		if err := st.SavePayment(ctx, p, p.Version-1); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	_ = json.NewEncoder(os.Stdout).Encode(p)
}
`

// prevPayment is the previous release's payments.Payment as its command
// prints it.
type prevPayment struct {
	PSPReference    string
	AuthorisedValue int64
	CapturedValue   int64
	RefundedValue   int64
	State           string
	Reservations    map[string]int64
	History         []struct{ Kind, PSPReference string }
	Version         int64
}

// buildPreviousRelease extracts the previous release from this
// repository's history and builds prevReleaseMain in it.
func buildPreviousRelease(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	archive := exec.Command("git", "archive", "--format=tar", previousRelease, "go.mod", "go.sum", "shared", "internal")
	archive.Dir = ".."
	tarball, err := archive.Output()
	if err != nil {
		t.Fatalf("git archive %s (the release before ledgers; a clone needs its history, not --depth): %v", previousRelease, err)
	}
	untar := exec.Command("tar", "-x", "-C", dir)
	untar.Stdin = strings.NewReader(string(tarball))
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	main := filepath.Join(dir, "cmd", "prev")
	if err := os.MkdirAll(main, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(main, "main.go"), []byte(prevReleaseMain), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "prev")
	args := []string{"build", "-o", bin}
	if raceEnabled { // the dependencies as this binary's were built: from the build cache
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "./cmd/prev")...)
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the release before ledgers: %v\n%s", err, out)
	}
	return bin
}

// The ledger ships in two releases (docs/payments.md, "Compatibility"):
// the release before ledgers — built here from this repository's history,
// its own store code — runs beside the bridge on one table (a canary, or
// after a rollback) and each reads and writes on what the other wrote.
func TestPreviousReleaseBesideTheBridge(t *testing.T) {
	ctx := context.Background()
	prev := buildPreviousRelease(t)
	endpoint := moto.Endpoint(t)
	client := moto.DynamoClient(t, endpoint)
	table := moto.TableName(t)
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	bridge := dynamo.New(client, table, clk, dynamo.WithLegacyPaymentWrites())
	run := func(args ...string) prevPayment {
		t.Helper()
		cmd := exec.Command(prev, append([]string{endpoint, moto.Region, table}, append(args, clk.Now().Format(time.RFC3339))...)...)
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("the release before ledgers, %v: %v %s", args, err, stderr)
		}
		var p prevPayment
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		return p
	}

	// The bridge takes a payment: authorised for 1999, 500 captured and
	// answered, 300 being captured.
	const psp = "PSP_PREV"
	yes := true
	h := payments.Head{PSPReference: psp, MerchantID: "m_a", SiteID: "site_1", Reference: "order-1", Source: payments.SourceAdvanced,
		Amount: money.Amount{Value: 1999, Currency: "EUR"}, CaptureMode: tenant.CaptureManual, PaymentMethod: "visa",
		Auth: payments.Auth{ResultCode: "Authorised", Notified: &yes}, Authorised: 1999, Seq: 1, CreatedAt: t0, UpdatedAt: t0, Version: 1}
	h.Totals = payments.Fold(h, nil)
	mustWrite(t, bridge, payments.Write{PSP: psp, Put: &h, At: t0,
		Facts: []payments.Fact{{ID: "payment", At: t0, Kind: "payment", Origin: payments.OriginAPI, PSPReference: psp, Detail: "Authorised"}}})
	clk.Advance(time.Second)
	a := captureEntry("op_a", 500, clk.Now())
	mustWrite(t, bridge, captureRequest(psp, a))
	clk.Advance(time.Second)
	answered := a
	answered.Answered, answered.Version = &payments.Answer{Outcome: payments.Received, At: clk.Now()}, 2
	mustWrite(t, bridge, payments.Write{PSP: psp, Delta: answered.Contribution().Sub(a.Contribution()), At: clk.Now(),
		Entries: []payments.Entry{answered}, Facts: []payments.Fact{{ID: "op_a#answered", At: clk.Now(), Kind: "capture",
			Origin: payments.OriginAPI, PSPReference: "op_a", Amount: &a.Requested.Amount, Detail: "received"}}})
	clk.Advance(time.Second)
	mustWrite(t, bridge, captureRequest(psp, captureEntry("op_b", 300, clk.Now())))

	// The release before ledgers reads it: the same money.
	p := run("get", psp)
	if p.Version != 4 || p.AuthorisedValue != 1999 || p.CapturedValue != 500 || p.State != "PartiallyCaptured" ||
		len(p.Reservations) != 1 || p.Reservations["op_b"] != 300 || len(p.History) != 4 {
		t.Fatalf("the release before ledgers reads %+v", p)
	}

	// It reserves a capture of its own (saved by its store, under its
	// condition); the bridge reads that and writes on, guarding the money
	// both reserved.
	clk.Advance(time.Second)
	if p = run("reserve", psp, "op_c", "1100"); p.Version != 5 {
		t.Fatalf("the release before ledgers saved %+v", p)
	}
	clk.Advance(time.Second)
	if err := bridge.Write(ctx, captureRequest(psp, captureEntry("op_d", 100, clk.Now()))); err == nil {
		t.Fatalf("the bridge captured 100 of the 99 left after the release before ledgers reserved 1100")
	}
	mustWrite(t, bridge, captureRequest(psp, captureEntry("op_d", 99, clk.Now())))
	head, err := bridge.GetPayment(ctx, psp)
	if err != nil {
		t.Fatal(err)
	}
	if v := head.View(); v.Captured != 500 || v.CapturesInFlight != 1499 || v.Capturable != 0 || head.Version != 6 {
		t.Fatalf("the bridge reads version %d, %+v", head.Version, v)
	}
	// And the release before ledgers reads the bridge's write on its own.
	if p = run("get", psp); p.Version != 6 || p.CapturedValue != 500 || p.Reservations["op_b"] != 300 ||
		p.Reservations["op_c"] != 1100 || p.Reservations["op_d"] != 99 || len(p.History) != 6 {
		t.Fatalf("the release before ledgers reads %+v", p)
	}
}

func captureEntry(ref string, v int64, at time.Time) payments.Entry {
	return payments.Entry{Ref: ref, Kind: payments.OpCapture, Version: 1, Requested: &payments.Request{
		Amount: money.Amount{Value: v, Currency: "EUR"}, UpstreamKey: "k-" + ref, At: at}}
}

// captureRequest is a capture's request write, guarded as the domain
// guards it.
func captureRequest(psp string, e payments.Entry) payments.Write {
	v, a := e.Requested.Amount.Value, e.Requested.Amount
	return payments.Write{PSP: psp, Delta: e.Contribution(), At: e.Requested.At, Entries: []payments.Entry{e},
		Expect: payments.Expect{MerchantID: "m_a", Authorised: true, NoReversal: true, NoAmountUpdate: true, Currency: "EUR", Capturable: &v},
		Facts: []payments.Fact{{ID: e.Ref + "#requested", At: e.Requested.At, Kind: "capture-requested", Origin: payments.OriginAPI,
			PSPReference: e.Ref, Amount: &a}}}
}

func mustWrite(t *testing.T, s payments.Store, w payments.Write) {
	t.Helper()
	if err := s.Write(context.Background(), w); err != nil {
		t.Fatalf("write: %v", err)
	}
}
