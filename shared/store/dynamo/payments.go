package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
)

// Key parts of session and payment items (see doc.go).
const (
	pfxSession = "SESSION#"
	pfxPayment = "PAYMENT#"
)

// PutSession writes a session, replacing one with the same id; DynamoDB's
// TTL deletes it some time after it expires.
func (s *Store) PutSession(ctx context.Context, sess payments.Session) error {
	if sess.ID == "" {
		return fmt.Errorf("dynamo: put session: %w", errEmpty("id"))
	}
	item, err := SessionItem(sess)
	if err == nil {
		err = s.putItem(ctx, item)
	}
	if err != nil {
		return fmt.Errorf("dynamo: put session %q: %w", sess.ID, err)
	}
	return nil
}

// GetSession returns a session, or storeerr.ErrNotFound if it is unknown or
// expired by the store's clock.
func (s *Store) GetSession(ctx context.Context, id string) (payments.Session, error) {
	rec, err := getData[records.Session](ctx, s, pfxSession+id, skMeta)
	sess := rec.ToSession()
	if err == nil && !sess.ExpiresAt.After(s.clock.Now()) {
		err = storeerr.ErrNotFound
	}
	if err != nil {
		return payments.Session{}, fmt.Errorf("dynamo: get session %q: %w", id, err)
	}
	return sess, nil
}

// A payment record is one item per partition PAYMENT#<pspReference>: the
// record without its history under META (attribute hn: how many history
// entries it has), and each history entry as its own item under
// H#<index, 10 digits> (see doc.go), so the META item stays small however
// long the history grows. Every item of a record carries the same ttl
// (CreatedAt + store.PaymentRetention).
const (
	skHistory    = "H#"
	attrHistoryN = "hn"
	// attrWriteToken names the call that wrote a versioned item — a
	// payment's META, an event, a delivery — (random per call): a write
	// whose condition fails on an item of its own version and token had
	// landed — DynamoDB applied it, its answer was lost and the SDK sent it
	// again — and is reported done, not as a conflict that would have its
	// caller apply the change a second time.
	attrWriteToken = "wt"
	// maxNewEntries bounds the history entries one SavePayment may add: a
	// transaction holds at most 100 writes, one of them the META item.
	maxNewEntries = 99
	// readAttempts bounds GetPayment's re-reads of a record whose history
	// was read while a save was landing.
	readAttempts = 5
)

func historySK(i int) string { return fmt.Sprintf("%s%010d", skHistory, i) }

// GetPayment returns a payment (strongly consistent), or storeerr.ErrNotFound
// (also once it is past its retention, before DynamoDB's TTL deletes it).
// One Query of the record's partition, META first (descending), then its
// history; entries past META's count (a save that lost its condition never
// writes any, but a newer save may land while the query runs) are ignored.
func (s *Store) GetPayment(ctx context.Context, pspReference string) (payments.Payment, error) {
	for range readAttempts {
		p, complete, err := s.readPayment(ctx, pspReference)
		if err != nil {
			return payments.Payment{}, fmt.Errorf("dynamo: get payment %q: %w", pspReference, err)
		}
		if complete {
			return p, nil
		}
	}
	return payments.Payment{}, fmt.Errorf("dynamo: get payment %q: history incomplete after %d reads", pspReference, readAttempts)
}

// readPayment reads the record once; complete is false when the history
// read does not match META's count.
func (s *Store) readPayment(ctx context.Context, psp string) (payments.Payment, bool, error) {
	r, complete, err := s.readRecord(ctx, psp)
	return r.ToPayment(), complete, err
}

// readRecord reads the stored record once (see readPayment).
func (s *Store) readRecord(ctx context.Context, psp string) (records.Payment, bool, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pfxPayment + psp)},
		ConsistentRead:            aws.Bool(true),
		ScanIndexForward:          aws.Bool(false),
	}
	var (
		p       records.Payment
		meta    bool
		n       int
		history []records.Event
		filled  []bool
	)
	pages := dynamodb.NewQueryPaginator(s.client, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return p, false, err
		}
		for _, item := range page.Items {
			sk := getS(item, attrSK)
			switch {
			case sk == skMeta:
				if p, err = decodeData[records.Payment](item); err != nil {
					return p, false, err
				}
				if !p.CreatedAt.IsZero() && !p.CreatedAt.Add(store.PaymentRetention).After(s.clock.Now()) {
					return p, false, storeerr.ErrNotFound
				}
				meta = true
				if _, split := item[attrHistoryN]; !split {
					return p, true, nil // written before history items: all in data
				}
				n = int(getN(item, attrHistoryN))
				history, filled = make([]records.Event, n), make([]bool, n)
			case !meta:
				// History items without META: a record being created.
			case strings.HasPrefix(sk, skHistory):
				i, err := strconv.Atoi(sk[len(skHistory):])
				if err != nil {
					return p, false, fmt.Errorf("history item %q: %w", sk, err)
				}
				if i >= n {
					continue // a save landing after META was read
				}
				if history[i], err = decodeData[records.Event](item); err != nil {
					return p, false, err
				}
				filled[i] = true
			}
		}
	}
	if !meta {
		return p, false, storeerr.ErrNotFound
	}
	for _, ok := range filled {
		if !ok {
			return p, false, nil
		}
	}
	p.History = history
	return p, true, nil
}

// SavePayment writes p if the stored version is prevVersion (0: no record
// may exist, or only one past its retention): one TransactWriteItems of the
// META item, conditional on the version, and of the history entries p adds.
// Which entries are new is not passed in: the save assumes one (the domain
// appends one per change), conditional on META's count being at least
// that; if the condition fails only because more were added, it reads the
// count and saves again. storeerr.ErrConflict if the version moved.
func (s *Store) SavePayment(ctx context.Context, p payments.Payment, prevVersion int64) error {
	switch {
	case p.PSPReference == "":
		return fmt.Errorf("dynamo: save payment: %w", errEmpty("pspReference"))
	case p.Version != prevVersion+1:
		return fmt.Errorf("dynamo: save payment %q: version %d must be previous version %d + 1", p.PSPReference, p.Version, prevVersion)
	}
	r := records.FromPayment(p)
	from := 0
	if prevVersion != 0 {
		from = max(len(r.History)-1, 0)
	}
	token := writeToken()
	err := s.savePayment(ctx, r, prevVersion, from, false, token)
	var moved *historyMoved
	if errors.As(err, &moved) && prevVersion != 0 {
		if landed(s.failedMeta(ctx, r, moved), r, token) {
			return nil
		}
		var legacy bool
		from, legacy, err = s.storedHistory(ctx, r, prevVersion, moved.old)
		if err == nil {
			err = s.savePayment(ctx, r, prevVersion, from, legacy, token)
		}
	}
	if errors.As(err, &moved) {
		err = storeerr.ErrConflict
		if landed(s.failedMeta(ctx, r, moved), r, token) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("dynamo: save payment %q (version %d): %w", p.PSPReference, prevVersion, err)
	}
	return nil
}

// historyMoved: the save's condition failed (version or history count);
// old is the stored META item when DynamoDB returned it.
type historyMoved struct {
	old map[string]types.AttributeValue
}

func (*historyMoved) Error() string { return "condition failed" }

// savePayment writes META and the history entries from index from on, in
// one transaction conditional on the stored version being prev and its
// history count at least from (legacy: META has no count, its history is
// in data and was copied to items by storedHistory).
func (s *Store) savePayment(ctx context.Context, p records.Payment, prev int64, from int, legacy bool, token string) error {
	n := len(p.History)
	if n-from > maxNewEntries {
		return fmt.Errorf("%d new history entries in one save (at most %d)", n-from, maxNewEntries)
	}
	item, err := paymentMetaItem(p)
	if err == nil {
		item[attrWriteToken] = str(token)
		err = checkSize(item)
	}
	if err != nil {
		return err
	}
	put := &types.Put{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ConditionExpression:                 aws.String("attribute_not_exists(#pk) OR #ttl <= :now"),
		ExpressionAttributeNames:            map[string]string{"#pk": attrPK, "#ttl": attrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": ttlOf(s.clock.Now()),
		},
	}
	if prev != 0 {
		put.ConditionExpression = aws.String("#version = :prev AND #hn >= :from")
		put.ExpressionAttributeNames = map[string]string{"#version": attrVersion, "#hn": attrHistoryN}
		put.ExpressionAttributeValues = map[string]types.AttributeValue{":prev": num(prev), ":from": num(int64(from))}
		if legacy {
			put.ConditionExpression = aws.String("#version = :prev AND attribute_not_exists(#hn)")
			delete(put.ExpressionAttributeValues, ":from")
		}
	}
	writes := []types.TransactWriteItem{{Put: put}}
	for i := from; i < n; i++ {
		h, err := paymentHistoryItem(p, i)
		if err == nil {
			err = checkSize(h)
		}
		if err != nil {
			return err
		}
		writes = append(writes, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: h}})
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: writes})
	if transactionConflict(err) {
		return storeerr.ErrConflict // a concurrent save: re-read and retry
	}
	if transactionConditionFailed(err) {
		return &historyMoved{old: cancelledItem(err)}
	}
	return err
}

// failedMeta returns the stored META a failed save met: the item DynamoDB
// returned with the failure, else read now (and kept in moved for the
// next look); nil when it cannot be read.
func (s *Store) failedMeta(ctx context.Context, p records.Payment, moved *historyMoved) map[string]types.AttributeValue {
	moved.old = s.itemOr(ctx, moved.old, pfxPayment+p.PSPReference, skMeta)
	return moved.old
}

// landed reports whether meta is p's version written by the save with
// token: the save had been applied (attrWriteToken).
func landed(meta map[string]types.AttributeValue, p records.Payment, token string) bool {
	return wrote(meta, p.Version, token)
}

// wrote reports whether item (nil: unknown) is version, written by the
// call with token.
func wrote(item map[string]types.AttributeValue, version int64, token string) bool {
	return item != nil && getN(item, attrVersion) == version && getS(item, attrWriteToken) == token
}

// writeToken returns a new random token for attrWriteToken.
func writeToken() string {
	var b [writeTokenBytes]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeTokenBytes is a write token's randomness (hex: twice as many
// characters).
const writeTokenBytes = 12

// writeTokenPlaceholder is a token's length of zeros: the META item's
// builder's value (its size is what the capacity model counts).
var writeTokenPlaceholder = strings.Repeat("0", 2*writeTokenBytes)

// storedHistory reads META after a failed save (or takes old, the item
// DynamoDB returned with the failure): storeerr.ErrConflict if its
// version is not prev, else how many history entries are stored as items.
// A record written before history items (its history in data) has its
// entries written as items first — they are the stored ones, the same for
// every writer — and then counts as having none.
func (s *Store) storedHistory(ctx context.Context, p records.Payment, prev int64, old map[string]types.AttributeValue) (from int, legacy bool, err error) {
	item := old
	if item == nil {
		item, err = s.getItem(ctx, pfxPayment+p.PSPReference, skMeta)
	}
	if errors.Is(err, storeerr.ErrNotFound) {
		return 0, false, storeerr.ErrConflict
	}
	if err != nil {
		return 0, false, err
	}
	if getN(item, attrVersion) != prev {
		return 0, false, storeerr.ErrConflict
	}
	if _, split := item[attrHistoryN]; split {
		return int(getN(item, attrHistoryN)), false, nil
	}
	inline, err := decodeData[records.Payment](item)
	if err != nil {
		return 0, false, err
	}
	ttl := paymentTTL(p)
	for i, e := range inline.History {
		h, err := dataItem(pfxPayment+p.PSPReference, historySK(i), e)
		if err == nil {
			setTTL(h, ttl)
			err = s.putItem(ctx, h)
		}
		if err != nil {
			return 0, false, fmt.Errorf("move history entry %d to its item: %w", i, err)
		}
	}
	return len(inline.History), true, nil
}

// getN returns item[name] as an integer (0 if absent or not a number).
func getN(item map[string]types.AttributeValue, name string) int64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

// paymentTTL is the ttl of every item of p's record (nil for a record
// without CreatedAt: kept).
func paymentTTL(p records.Payment) types.AttributeValue {
	if p.CreatedAt.IsZero() {
		return nil
	}
	return ttlOf(p.CreatedAt.Add(store.PaymentRetention))
}

// setTTL sets item's ttl unless ttl is nil.
func setTTL(item map[string]types.AttributeValue, ttl types.AttributeValue) {
	if ttl != nil {
		item[attrTTL] = ttl
	}
}
