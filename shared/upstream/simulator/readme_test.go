package simulator

import (
	"os"
	"strings"
	"testing"
)

// README.md documents every row of the Go test tables, and says for each
// holder-name row whether the platform's test table confirms it.
func TestReadmeDocumentsTables(t *testing.T) {
	b, err := os.ReadFile("README.md")
	must(t, err)
	text := string(b)
	compact := strings.ReplaceAll(text, " ", "")
	for _, c := range TestCards() {
		cvc := c.CVC
		if cvc == "" {
			cvc = "—"
		}
		if !strings.Contains(compact, "|"+c.Number+"|"+c.Brand+"|"+cvc+"|") {
			t.Errorf("README.md lacks card %s (%s, CVC %s)", c.Number, c.Brand, cvc)
		}
	}
	lines := strings.Split(text, "\n")
	for _, o := range HolderNameOutcomes() {
		row := "| `" + o.HolderName + "` |"
		var line string
		for _, l := range lines {
			if strings.HasPrefix(l, row) {
				line = l
				break
			}
		}
		if line == "" {
			t.Errorf("README.md lacks holder name %q", o.HolderName)
			continue
		}
		if o.RefusalReason != "" && !strings.HasPrefix(line, row+" "+o.ResultCode+" | "+o.RefusalReason+" ("+o.RefusalReasonCode+") |") {
			t.Errorf("README.md row of %q does not say %s / %s (%s)", o.HolderName, o.ResultCode, o.RefusalReason, o.RefusalReasonCode)
		}
		switch {
		case o.AcquirerResponseCode != "" && o.Checked && !strings.HasSuffix(line, "| table |"):
			t.Errorf("README.md row of %q does not give the platform's table as its source", o.HolderName)
		case o.AcquirerResponseCode != "" && !o.Checked && !strings.Contains(line, "| code;"):
			t.Errorf("README.md row of %q does not say that only its code is confirmed", o.HolderName)
		case o.AcquirerResponseCode == "" && o.Checked && !strings.HasSuffix(line, "| modification |"):
			t.Errorf("README.md row of %q does not give its source", o.HolderName)
		case o.AcquirerResponseCode == "" && !o.Checked && !strings.HasSuffix(line, "| simulator |"):
			t.Errorf("README.md row of %q does not say it is a simulator extension", o.HolderName)
		}
	}
}
