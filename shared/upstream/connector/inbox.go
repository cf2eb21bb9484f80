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
	// BasicAuth: the endpoint checks basic auth (httpapi.BasicAuth is
	// set), the only authentication of the type/data bodies.
	BasicAuth bool
}

// typedCodes are the event codes of the platform's type/data bodies
// (Webhooks-v1 "Other webhooks"): no notificationItems, no item HMAC.
var typedCodes = map[string]string{
	"ach.notificationOfChange": "ACH_NOTIFICATION_OF_CHANGE",
	"eft.notificationOfChange": "DIRECT_DEBIT_NOTICE_OF_CHANGE_NOTIFICATION",
}

// typedBody is a type/data body, as far as it is kept: the bank details
// it carries are not (they are the shopper's).
type typedBody struct {
	Type        string `json:"type"`
	Version     string `json:"version"`
	CreatedAt   string `json:"createdAt"`
	Environment string `json:"environment"`
	Data        struct {
		PSPReference         string `json:"pspReference"`
		NotificationOfChange struct {
			ReasonCode string `json:"reasonCode"`
		} `json:"notificationOfChange"`
	} `json:"data"`
}

// acceptTyped hands a type/data body to the Receiver as one account-level
// item (typedCodes; ok false: body is not one). It is authenticated only
// by the endpoint's basic auth.
func (in *Inbox) acceptTyped(ctx context.Context, body []byte) (psp string, ok bool, err error) {
	var b typedBody
	if json.Unmarshal(body, &b) != nil || typedCodes[b.Type] == "" {
		return "", false, nil
	}
	if !in.BasicAuth {
		in.Log.WarnContext(ctx, "notification refused: a type/data body needs the endpoint's basic auth", "type", b.Type)
		return "", true, apperr.New(apperr.Unauthenticated, "a "+b.Type+" notification needs the endpoint's basic auth")
	}
	live := "false"
	if b.Environment == "live" {
		live = "true"
	}
	item := payments.Notification{EventCode: typedCodes[b.Type], PSPReference: b.Data.PSPReference, EventDate: b.CreatedAt,
		Success: "true", AdditionalData: map[string]string{"type": b.Type, "version": b.Version, "environment": b.Environment}}
	if rc := b.Data.NotificationOfChange.ReasonCode; rc != "" {
		item.AdditionalData["notificationOfChange.reasonCode"] = rc
	}
	return item.PSPReference, true, in.Receiver.Accept(ctx, live, []payments.Notification{item})
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
	if len(note.NotificationItems) == 0 {
		if psp, ok, err := in.acceptTyped(ctx, body); ok {
			return psp, err
		}
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
