package simulator

import (
	"os"
	"strings"
	"testing"
)

// README.md documents every row of the Go test tables.
func TestReadmeDocumentsTables(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	compact := strings.ReplaceAll(text, " ", "")
	for _, c := range TestCards() {
		if !strings.Contains(compact, "|"+c.Number+"|"+c.Brand+"|"+c.CVC+"|") {
			t.Errorf("README.md lacks card %s (%s, CVC %s)", c.Number, c.Brand, c.CVC)
		}
	}
	for _, o := range HolderNameOutcomes() {
		row := "| `" + o.HolderName + "` |"
		if !strings.Contains(text, row) {
			t.Errorf("README.md lacks holder name %q", o.HolderName)
			continue
		}
		if o.RefusalReason != "" && !strings.Contains(text, row+" "+o.ResultCode+" | "+o.RefusalReason+" ("+o.RefusalReasonCode+") |") {
			t.Errorf("README.md row of %q does not say %s / %s (%s)", o.HolderName, o.ResultCode, o.RefusalReason, o.RefusalReasonCode)
		}
	}
}
