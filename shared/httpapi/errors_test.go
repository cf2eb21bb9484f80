package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/apperr"
)

// TestErrorTableDocumented keeps docs/api.md's error table in step with errorTable.
func TestErrorTableDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	for kind, spec := range errorTable {
		row := fmt.Sprintf("| %d | %s |", spec.Status, spec.Code)
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/api.md lacks the error row %q (kind %d)", row, kind)
		}
	}
}

func TestRenderErrorHidesInternalCause(t *testing.T) {
	w := httptest.NewRecorder()
	writeError(w, nil, apperr.Wrap(apperr.Internal, "db exploded at 10.0.0.1", fmt.Errorf("secret cause")))
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d", w.Code)
	}
	body := w.Body.String()
	if strings.Contains(body, "secret") || strings.Contains(body, "10.0.0.1") || !strings.Contains(body, `"errorCode":"yp_9000"`) {
		t.Fatalf("body %s", body)
	}
	if w.Header().Get("Content-Type") != "application/json" {
		t.Fatal("no JSON content type")
	}
}

// TestEveryKindHasARow: an error kind without a row would silently become
// 500 yp_9000; every kind must be mapped on purpose.
func TestEveryKindHasARow(t *testing.T) {
	kinds := apperr.Kinds()
	if len(kinds) < 20 {
		t.Fatalf("only %d kinds: apperr.Kinds is broken", len(kinds))
	}
	for _, k := range kinds {
		if _, ok := errorTable[k]; !ok {
			t.Errorf("kind %d has no row in errorTable", k)
		}
	}
	if len(errorTable) != len(kinds) {
		t.Errorf("errorTable has %d rows for %d kinds", len(errorTable), len(kinds))
	}
}
