package payments_test

import (
	"os"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/payments"
)

// TestCodesTableMatchesDocs: docs/payments.md's "Every notification code"
// table has exactly the rows of codes.go, with their category and source.
func TestCodesTableMatchesDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/payments.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "### Every notification code")
	if start < 0 {
		t.Fatal(`docs/payments.md has no "Every notification code" section`)
	}
	section := doc[start:]
	if end := strings.Index(section[1:], "\n#"); end >= 0 {
		section = section[:end+1]
	}
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 6 || strings.HasPrefix(strings.TrimSpace(cells[1]), "-") || strings.TrimSpace(cells[1]) == "code" {
			continue
		}
		code, category, source := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2]), strings.TrimSpace(cells[4])
		if code == "*any other code*" {
			code = "FUTURE_CODE_44"
		} else {
			rows++
		}
		c := payments.CodeOf(code)
		if c.Known() != (code != "FUTURE_CODE_44") || c.Category() != category || c.Source() != source {
			t.Errorf("%s: docs say %s (%s); the table: %s (%s), known %v", code, category, source, c.Category(), c.Source(), c.Known())
		}
	}
	if rows != 50 {
		t.Errorf("docs list %d codes, want the 50 of Webhooks-v1.json", rows)
	}
}

// TestCodeOf: the table's accessors.
func TestCodeOf(t *testing.T) {
	for _, tc := range []struct {
		code              string
		category          string
		account, unref, k bool
	}{
		{"REPORT_AVAILABLE", "account", true, false, true},
		{"REFUND_WITH_DATA", "money", false, true, true},
		{"EXPIRE", "state", false, false, true},
		{"CHARGEBACK", "dispute", false, false, true},
		{"FUTURE_CODE_44", "info", false, false, false},
	} {
		c := payments.CodeOf(tc.code)
		if c.Category() != tc.category || c.AccountLevel() != tc.account || c.Unreferenced() != tc.unref || c.Known() != tc.k || c.Source() == "" {
			t.Errorf("%s: %+v", tc.code, c)
		}
	}
}
