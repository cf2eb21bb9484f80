package dynamo

// Notification events and webhook deliveries (docs/webhooks.md) in the single
// table, following doc.go's conventions (record as JSON in data, version
// for conditional writes, strongly consistent base-table reads, lists
// through gsi1):
//
//	record     pk                   sk    gsi1pk                 gsi1sk
//	event      EVENT#<id>           META  PAYMENT#<pspReference>  EVENT#<receivedAt>#<id>
//	delivery   DELIVERY#<id>        META  MERCHANT#<merchant>     DELIVERY#<status>#<createdAt>#<id>
//
// Times in sort keys are fixed-width UTC (2006-01-02T15:04:05.000000000Z)
// so they sort as strings. SaveEvent and SaveDelivery are one PutItem
// conditional on the stored version (absence for version 0); a delivery's
// gsi1sk moves with its status, so a merchant's failed deliveries are one
// Query of gsi1 (begins_with DELIVERY#failed#).

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/store/internal/utc"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/webhooks"
)

var (
	_ notifications.EventStore = (*Store)(nil)
	_ webhooks.DeliveryStore   = (*Store)(nil)
)

// Key parts of event and delivery items.
const (
	pfxEvent         = "EVENT#"
	pfxDelivery      = "DELIVERY#"
	pfxPaymentEvents = "PAYMENT#"
	pfxMerchantIndex = "MERCHANT#"
	skRecord         = "META"
	sortTimeLayout   = "2006-01-02T15:04:05.000000000Z"
)

// sortTime renders t for a sort key.
func sortTime(t time.Time) string { return t.UTC().Format(sortTimeLayout) }

// GetEvent returns a notification event (strongly consistent), or
// storeerr.ErrNotFound.
func (s *Store) GetEvent(ctx context.Context, id string) (notifications.Event, error) {
	e, err := getData[notifications.Event](ctx, s, pfxEvent+id, skRecord)
	if err != nil {
		return notifications.Event{}, fmt.Errorf("dynamo: get event %q: %w", id, err)
	}
	return e, nil
}

// SaveEvent writes e if the stored version is prevVersion (0: absent).
func (s *Store) SaveEvent(ctx context.Context, e notifications.Event, prevVersion int64) error {
	switch {
	case e.ID == "":
		return fmt.Errorf("dynamo: save event: %w", errEmpty("id"))
	case e.Version != prevVersion+1:
		return fmt.Errorf("dynamo: save event %q: version %d must be previous version %d + 1", e.ID, e.Version, prevVersion)
	}
	e.ReceivedAt, e.UpdatedAt, e.ProcessedAt = e.ReceivedAt.UTC(), e.UpdatedAt.UTC(), utc.Ptr(e.ProcessedAt)
	item, err := dataItem(pfxEvent+e.ID, skRecord, e)
	if err != nil {
		return fmt.Errorf("dynamo: save event %q: %w", e.ID, err)
	}
	item[attrGSI1PK] = str(pfxPaymentEvents + e.PaymentPSP)
	item[attrGSI1SK] = str(pfxEvent + sortTime(e.ReceivedAt) + "#" + e.ID)
	if err := s.putVersioned(ctx, item, e.Version, prevVersion); err != nil {
		return fmt.Errorf("dynamo: save event %q (version %d): %w", e.ID, prevVersion, err)
	}
	return nil
}

// ListPaymentEvents returns the events of payment psp, oldest first
// (gsi1, eventually consistent).
func (s *Store) ListPaymentEvents(ctx context.Context, psp string) ([]notifications.Event, error) {
	out, err := queryData[notifications.Event](ctx, s, indexQuery(pfxPaymentEvents+psp, pfxEvent))
	if err != nil {
		return nil, fmt.Errorf("dynamo: list events of payment %q: %w", psp, err)
	}
	return out, nil
}

// GetDelivery returns a webhook delivery (strongly consistent), or
// storeerr.ErrNotFound.
func (s *Store) GetDelivery(ctx context.Context, id string) (webhooks.Delivery, error) {
	d, err := getData[webhooks.Delivery](ctx, s, pfxDelivery+id, skRecord)
	if err != nil {
		return webhooks.Delivery{}, fmt.Errorf("dynamo: get delivery %q: %w", id, err)
	}
	return d, nil
}

// SaveDelivery writes d if the stored version is prevVersion (0: absent).
func (s *Store) SaveDelivery(ctx context.Context, d webhooks.Delivery, prevVersion int64) error {
	switch {
	case d.ID == "":
		return fmt.Errorf("dynamo: save delivery: %w", errEmpty("id"))
	case d.MerchantID == "":
		return fmt.Errorf("dynamo: save delivery %q: %w", d.ID, errEmpty("merchantId"))
	case d.Version != prevVersion+1:
		return fmt.Errorf("dynamo: save delivery %q: version %d must be previous version %d + 1", d.ID, d.Version, prevVersion)
	}
	d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	d.LastAttemptAt, d.NextAttemptAt, d.DeliveredAt = utc.Ptr(d.LastAttemptAt), utc.Ptr(d.NextAttemptAt), utc.Ptr(d.DeliveredAt)
	item, err := dataItem(pfxDelivery+d.ID, skRecord, d)
	if err != nil {
		return fmt.Errorf("dynamo: save delivery %q: %w", d.ID, err)
	}
	item[attrGSI1PK] = str(pfxMerchantIndex + d.MerchantID)
	item[attrGSI1SK] = str(deliverySortKey(d.Status) + sortTime(d.CreatedAt) + "#" + d.ID)
	if err := s.putVersioned(ctx, item, d.Version, prevVersion); err != nil {
		return fmt.Errorf("dynamo: save delivery %q (version %d): %w", d.ID, prevVersion, err)
	}
	return nil
}

// deliverySortKey is the gsi1sk prefix of a merchant's deliveries in status.
func deliverySortKey(st webhooks.Status) string { return pfxDelivery + string(st) + "#" }

// ListDeliveries returns the merchant's deliveries in status (all when
// ""), newest first, at most limit (gsi1, eventually consistent).
func (s *Store) ListDeliveries(ctx context.Context, merchantID string, status webhooks.Status, limit int) ([]webhooks.Delivery, error) {
	statuses := []webhooks.Status{status}
	if status == "" {
		statuses = webhooks.Statuses
	}
	out := []webhooks.Delivery{}
	for _, st := range statuses {
		ds, err := s.queryNewest(ctx, pfxMerchantIndex+merchantID, deliverySortKey(st), limit)
		if err != nil {
			return nil, fmt.Errorf("dynamo: list deliveries of %q: %w", merchantID, err)
		}
		out = append(out, ds...)
	}
	webhooks.SortNewestFirst(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// queryNewest reads gsi1 items of gsi1pk whose gsi1sk starts with prefix,
// newest first, stopping after limit (limit <= 0: all).
func (s *Store) queryNewest(ctx context.Context, gsi1pk, prefix string, limit int) ([]webhooks.Delivery, error) {
	in := indexQuery(gsi1pk, prefix)
	in.TableName = aws.String(s.table)
	in.ScanIndexForward = aws.Bool(false)
	if limit > 0 {
		in.Limit = aws.Int32(int32(min(limit, 1000)))
	}
	out := []webhooks.Delivery{}
	pages := dynamodb.NewQueryPaginator(s.client, in)
	for pages.HasMorePages() && (limit <= 0 || len(out) < limit) {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, item := range page.Items {
			d, err := decodeData[webhooks.Delivery](item)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// putVersioned writes item with its version attribute, conditional on the
// stored version being prev (absence when prev is 0).
func (s *Store) putVersioned(ctx context.Context, item map[string]types.AttributeValue, version, prev int64) error {
	item[attrVersion] = num(version)
	in := &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	}
	if prev != 0 {
		in.ConditionExpression = aws.String("#version = :prev")
		in.ExpressionAttributeNames = map[string]string{"#version": attrVersion}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":prev": num(prev)}
	}
	_, err := s.client.PutItem(ctx, in)
	if _, failed := conditionFailed(err); failed {
		return storeerr.ErrConflict
	}
	return err
}
