package admincli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/recordupdates"
)

// keptUpdate is a record update kept for later in a listing.
type keptUpdate struct {
	ID           string        `json:"id"`
	Kind         string        `json:"kind,omitempty"`
	PSPReference string        `json:"pspReference,omitempty"`
	Op           string        `json:"op,omitempty"`
	Modification string        `json:"modification,omitempty"`
	Amount       *money.Amount `json:"amount,omitempty"`
	Status       string        `json:"status,omitempty"`
	At           *time.Time    `json:"at,omitempty"` // when the upstream answered
	// Malformed is why the kept body does not decode (the local server
	// removes such an update at its next attempt).
	Malformed string `json:"malformed,omitempty"`
}

func (c *cli) recordUpdateList(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "[--json]",
		"Lists the payment record updates the service deferred (the store refused them after the\n"+
			"upstream answered) and keeps applying until they land: oldest first. Embedded store only;\n"+
			"on DynamoDB they are messages of the record updates queue and its DLQ (docs/runbook.md).")
	if err := f.parse(args); err != nil {
		return err
	}
	return c.withStore(ctx, func(s *session) error {
		if s.stores.RecordUpdates == nil {
			return errors.New("this store keeps no record updates: with DynamoDB they are in the SQS record updates queue " +
				"(PAYSVC_RECORD_UPDATES_QUEUE_URL) and its DLQ; see the runbook's record-updates-dlq")
		}
		kept, err := s.stores.RecordUpdates.RecordUpdates(ctx)
		if err != nil {
			return fmt.Errorf("list record updates: %w", err)
		}
		list := make([]keptUpdate, 0, len(kept))
		for _, k := range kept {
			list = append(list, describeUpdate(k))
		}
		if *f.json {
			return c.printJSON(list)
		}
		t := newTable(c.stdout)
		t.row("ID", "KIND", "PSP REFERENCE", "OPERATION", "MODIFICATION", "AMOUNT", "STATUS", "ANSWERED")
		for _, u := range list {
			if u.Malformed != "" {
				t.row(u.ID, "malformed", "", "", "", "", u.Malformed, "")
				continue
			}
			amount := ""
			if u.Amount != nil {
				amount = fmt.Sprintf("%d %s", u.Amount.Value, u.Amount.Currency)
			}
			t.row(u.ID, u.Kind, u.PSPReference, u.Op, u.Modification, amount, u.Status, fmtTime(*u.At))
		}
		return t.flush()
	})
}

// describeUpdate decodes a kept update for a listing.
func describeUpdate(k recordupdates.Stored) keptUpdate {
	u, err := recordupdates.Decode(k.Body)
	if err != nil {
		return keptUpdate{ID: k.ID, Malformed: err.Error()}
	}
	out := keptUpdate{ID: k.ID, Kind: string(u.Kind), PSPReference: u.PSPReference, Op: u.Op,
		Modification: u.Modification, Status: u.Status, At: &u.At}
	if u.Amount != (money.Amount{}) {
		amount := u.Amount
		out.Amount = &amount
	}
	return out
}
