package connector

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/jsonin"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/upstream"
)

// Receiver processes verified notification items (notifications.Receiver).
type Receiver interface {
	Accept(ctx context.Context, live string, items []payments.Notification) error
}

// Inbox decodes the platform's notification posts (its standard
// notification format), checks every item's HMAC signature and hands the
// items, translated, to the Receiver. It is the notifications endpoint's
// port (httpapi.NotificationsAPI).
type Inbox struct {
	Signer   *upstream.Signer // the platform's HMAC key
	Receiver Receiver
	Log      *slog.Logger
}

// Accept decodes, verifies and processes a notification body. psp is the
// pspReference of its item when it has one, for the request log. A body
// that is not a standard notification is an apperr.Invalid error; a
// missing or bad signature on any item an apperr.Unauthenticated one, and
// nothing is stored then.
func (in *Inbox) Accept(ctx context.Context, body []byte) (psp string, err error) {
	var note upstream.Notification
	if err := json.Unmarshal(body, &note); err != nil {
		return "", apperr.Wrap(apperr.Invalid, "notification body is not a standard notification", err)
	}
	if field, dup := jsonin.DuplicateKey(body); dup {
		return "", apperr.InvalidField(field, "is given more than once")
	}
	items := make([]payments.Notification, len(note.NotificationItems))
	for i, w := range note.NotificationItems {
		if !in.Signer.VerifyItem(w.Item) {
			in.Log.WarnContext(ctx, "notification refused: bad or missing HMAC signature",
				"item", i, "eventCode", w.Item.EventCode, "pspReference", w.Item.PSPReference)
			return "", apperr.New(apperr.Unauthenticated, "invalid notification signature")
		}
		items[i] = Notification(w.Item)
	}
	if len(items) == 1 {
		psp = items[0].PSPReference
	}
	return psp, in.Receiver.Accept(ctx, note.Live, items)
}
