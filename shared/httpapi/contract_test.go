package httpapi

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/openapicheck"
)

// TestErrorTableInOpenAPI keeps docs/openapi.yaml in step with errorTable:
// every code of the table is in the document's Error schema and documented
// with its status on at least one answer, and the document declares no
// code the table does not have. (TestErrorTableDocumented does the same for
// README.)
func TestErrorTableInOpenAPI(t *testing.T) {
	c, err := openapicheck.Repository()
	if err != nil {
		t.Fatal(err)
	}
	declared := c.ErrorCodes()
	codes := map[string]bool{}
	for kind, spec := range errorTable {
		codes[spec.Code] = true
		if !slices.Contains(declared, spec.Code) {
			t.Errorf("docs/openapi.yaml: Error.errorCode lacks %s (kind %d)", spec.Code, kind)
		}
		if !c.Documents(spec.Status, spec.Code) {
			t.Errorf("docs/openapi.yaml: no %d answer documents %s (kind %d)", spec.Status, spec.Code, kind)
		}
	}
	for _, code := range declared {
		if !codes[code] {
			t.Errorf("docs/openapi.yaml declares %s, which the error table does not have", code)
		}
	}
	if t.Failed() {
		t.Log(strings.Join(declared, ", "), fmt.Sprint(len(errorTable)))
	}
}
