package admincli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/recordupdates"
	"github.com/yp/paysvc/shared/store/embedded"
)

// Record updates the service deferred on the embedded store are listed
// oldest first, decoded; one that does not decode is listed as such.
func TestRecordUpdateList(t *testing.T) {
	h := newEmbedded(t)
	ctx := context.Background()
	u := payments.RecordUpdate{Kind: payments.UpdateCapture, PSPReference: "PSP0000000000001", Op: "op_k1",
		Modification: "CAP0000000000001", Amount: money.Amount{Value: 500, Currency: "EUR"}, Status: "received", At: h.clk.Now()}
	body, err := recordupdates.Encode(u)
	if err != nil {
		t.Fatal(err)
	}
	st, err := embedded.Open(h.dbPath, embedded.WithClock(h.clk))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutRecordUpdate(ctx, "ru_1", body); err != nil {
		t.Fatal(err)
	}
	if err := st.PutRecordUpdate(ctx, "ru_2", []byte(`{"v":99}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	out := h.ok("record-update", "list")
	for _, want := range []string{"ru_1", "capture", "PSP0000000000001", "op_k1", "CAP0000000000001", "500 EUR", "received", "ru_2", "malformed"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	var listed []struct {
		ID           string        `json:"id"`
		Kind         string        `json:"kind"`
		PSPReference string        `json:"pspReference"`
		Op           string        `json:"op"`
		Modification string        `json:"modification"`
		Amount       *money.Amount `json:"amount"`
		Status       string        `json:"status"`
		At           *time.Time    `json:"at"`
		Malformed    string        `json:"malformed"`
	}
	h.jsonOK(&listed, "record-update", "list")
	if len(listed) != 2 || listed[0].ID != "ru_1" || listed[0].Kind != "capture" || listed[0].Amount == nil ||
		listed[0].Amount.Value != 500 || listed[0].At == nil || !listed[0].At.Equal(h.clk.Now()) ||
		listed[1].ID != "ru_2" || listed[1].Malformed == "" || listed[1].At != nil {
		t.Fatalf("--json: %+v", listed)
	}
}
