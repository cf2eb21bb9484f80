package moto_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/testutil/moto"
)

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

func TestEndpointAnswersDynamoDB(t *testing.T) {
	ep := moto.Endpoint(t)
	if again := moto.Endpoint(t); again != ep {
		t.Fatalf("second Endpoint call returned %q, want the same server %q", again, ep)
	}
	if _, err := moto.DynamoClient(t, ep).ListTables(context.Background(), nil); err != nil {
		t.Fatalf("ListTables against %s: %v", ep, err)
	}
	resp, err := http.Get(ep + "/moto-api/")
	if err != nil {
		t.Fatalf("GET %s: %v", ep, err)
	}
	resp.Body.Close()
}

// TestMissingServerFails runs this test binary again with an empty PATH: the
// child's Endpoint call must fail the test (not skip it) and say why.
func TestMissingServerFails(t *testing.T) {
	if os.Getenv("MOTO_TEST_CHILD") == "1" {
		moto.Endpoint(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMissingServerFails$", "-test.v")
	cmd.Env = append(os.Environ(), "MOTO_TEST_CHILD=1", "PATH="+t.TempDir(), moto.EnvEndpoint+"=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("child passed without moto_server on PATH; output:\n%s", out)
	}
	for _, want := range []string{"--- FAIL: TestMissingServerFails", "moto_server is not on PATH"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("child output lacks %q:\n%s", want, out)
		}
	}
}

func TestEndpointFromEnvironment(t *testing.T) {
	t.Setenv(moto.EnvEndpoint, "http://example.invalid:1234")
	if got := moto.Endpoint(t); got != "http://example.invalid:1234" {
		t.Fatalf("Endpoint with %s set: got %q", moto.EnvEndpoint, got)
	}
}

func TestTableNameUniqueAndValid(t *testing.T) {
	a, b := moto.TableName(t), moto.TableName(t)
	if a == b {
		t.Fatalf("TableName returned %q twice", a)
	}
	for _, name := range []string{a, b} {
		if len(name) < 3 || len(name) > 255 || strings.ContainsAny(name, "/ #") {
			t.Fatalf("invalid table name %q", name)
		}
		if !strings.Contains(name, "TestTableNameUniqueAndValid") {
			t.Fatalf("table name %q does not name the test", name)
		}
	}
}
