package tests

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/yp/paysvc/shared/openapicheck"
	"github.com/yp/paysvc/shared/upstream/simulator"
	"github.com/yp/paysvc/shared/upstream/upstreamapi"
)

// Helpers that fail the test on an error the test cannot go on from.

// readFile is the content of the file at path.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// repoChecker checks exchanges against docs/openapi.yaml.
func repoChecker(t *testing.T) *openapicheck.Checker {
	t.Helper()
	c, err := openapicheck.Repository()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// upstreamValidator validates against the platform's published documents.
func upstreamValidator(t *testing.T) *upstreamapi.Validator {
	t.Helper()
	v, err := upstreamapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// detailsFor is what the shopper's component sends back for action
// (simulator.DetailsFor).
func detailsFor(t *testing.T, action json.RawMessage, success bool) json.RawMessage {
	t.Helper()
	d, err := simulator.DetailsFor(action, success)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// encodeJSON is v in JSON.
func encodeJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeJSON decodes data into v.
func decodeJSON(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

// writeFile writes data to the file at path.
func writeFile(t *testing.T, path string, data []byte, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatal(err)
	}
}
