package dynamo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
)

// The bridge release (docs/payments.md, "Compatibility with records
// written before the ledger"): the release before ledgers reads a payment
// from its META item and H# history items and writes it back the same
// way, conditional on META's version and history count. A store made with
// WithLegacyPaymentWrites keeps every payment that is not a ledger yet — a
// new one, or one stored before ledgers — in that format, with its ledger
// inside (records.LedgerCopy), so that the release before ledgers can run
// beside it (a canary) or after it (a rollback) on the same table; the
// release after it reads those records as the ledgers they hold and moves
// them on their first write. A payment that is already a ledger (a later
// release wrote it, then was rolled back) stays one.

// WithLegacyPaymentWrites makes Write keep payments that are not ledgers
// yet in the format before ledgers (the bridge release).
func WithLegacyPaymentWrites() Option {
	return func(s *Store) { s.legacyWrites = true }
}

// legacyWriteAttempts bounds writeLegacy's re-reads of a record another
// writer moved on between its read and its write.
const legacyWriteAttempts = 20

// writeLegacy is Write on a payment that is not a ledger: read, w applied
// (payments.Write.ApplyTo), written back as a legacy record in one
// transaction conditional on what was read; read again when another
// writer moved it first. ledger is true when the payment is a ledger:
// nothing was done, the ledger's Write takes it.
func (s *Store) writeLegacy(ctx context.Context, w payments.Write) (ledger bool, _ error) {
	token := writeToken()
	for range legacyWriteAttempts {
		l, err := s.readLedger(ctx, w.PSP)
		if err != nil {
			return false, err
		}
		if l.found && l.legacy == nil {
			return true, nil
		}
		next, err := w.ApplyTo(payments.Ledger{Head: l.head, Found: l.found, Entries: l.entries, Facts: l.facts})
		if err != nil {
			if w.Claim != nil {
				if existing, held := s.claimTaken(ctx, *w.Claim); held {
					return false, &idempotency.Taken{Existing: existing}
				}
			}
			return false, err
		}
		ttl := headTTL(next.Head)
		items, err := s.legacyItems(records.FromLedger(next.Head, next.Entries, next.Facts), l.legacy, l.inline, token, ttl)
		if err != nil {
			return false, err
		}
		items = s.inFlightMarks(items, w.PSP, l.marks, next.Entries, ttl)
		if w.Claim != nil { // last: claimHeld finds its cancellation reason there
			put, err := s.claimPut(*w.Claim, s.clock.Now())
			if err != nil {
				return false, err
			}
			items = append(items, types.TransactWriteItem{Put: put})
		}
		if len(items) > 100 {
			return false, fmt.Errorf("%d writes in one transaction (at most 100)", len(items))
		}
		_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		switch {
		case err == nil:
			return false, nil
		case transactionConflict(err):
			continue // a concurrent transaction on an item: read again
		case !transactionConditionFailed(err):
			return false, err
		}
		if w.Claim != nil {
			if existing, held := s.claimHeld(ctx, *w.Claim, err, len(items)-1); held {
				return false, &idempotency.Taken{Existing: existing}
			}
		}
		if s.legacyLanded(ctx, w.PSP, err, token) {
			return false, nil
		}
		if w.Put != nil && w.Put.Version == 1 { // a new payment over an expired ledger not deleted yet
			if _, err := s.purgeExpired(ctx, w.PSP); err != nil {
				return false, err
			}
		}
	}
	return false, storeerr.ErrConflict
}

// legacyItems are the writes of legacy record r over old (nil: none, or
// one past its retention), each item with ttl: META conditional on old's version and history
// count (the condition of the release before ledgers), the history items
// old does not have (all of them when old's history is inline in META),
// and a check that the payment has no ledger head.
func (s *Store) legacyItems(r records.LegacyPayment, old *records.LegacyPayment, inline bool, token string, ttl types.AttributeValue) ([]types.TransactWriteItem, error) {
	pk := pfxPayment + r.PSPReference
	meta := r
	meta.History = nil
	it, err := dataItem(pk, skMeta, meta)
	if err != nil {
		return nil, err
	}
	it[attrVersion], it[attrHistN], it[attrWriteToken] = num(r.Version), num(int64(len(r.History))), str(token)
	setTTL(it, ttl)
	if err := checkSize(it); err != nil {
		return nil, err
	}
	put := &types.Put{TableName: aws.String(s.table), Item: it,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
	from := 0
	switch {
	case old == nil:
		put.ConditionExpression = aws.String("attribute_not_exists(#pk) OR #ttl <= :now")
		put.ExpressionAttributeNames = map[string]string{"#pk": attrPK, "#ttl": attrTTL}
		put.ExpressionAttributeValues = map[string]types.AttributeValue{":now": ttlOf(s.clock.Now())}
	case inline:
		put.ConditionExpression = aws.String("#v = :prev AND attribute_not_exists(#hn)")
		put.ExpressionAttributeNames = map[string]string{"#v": attrVersion, "#hn": attrHistN}
		put.ExpressionAttributeValues = map[string]types.AttributeValue{":prev": num(old.Version)}
	default:
		from = len(old.History)
		put.ConditionExpression = aws.String("#v = :prev AND #hn = :n")
		put.ExpressionAttributeNames = map[string]string{"#v": attrVersion, "#hn": attrHistN}
		put.ExpressionAttributeValues = map[string]types.AttributeValue{":prev": num(old.Version), ":n": num(int64(from))}
	}
	items := []types.TransactWriteItem{{Put: put}, {ConditionCheck: &types.ConditionCheck{
		TableName: aws.String(s.table), Key: itemKey(pk, skHead),
		ConditionExpression: aws.String("attribute_not_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	}}}
	for i := from; i < len(r.History); i++ {
		h, err := dataItem(pk, historySK(i), r.History[i])
		if err != nil {
			return nil, err
		}
		setTTL(h, ttl)
		if err := checkSize(h); err != nil {
			return nil, err
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: h}})
	}
	return items, nil
}

// A legacy record's operations awaiting their answer
// (payments.Entry.Recoverable) are in gsi1's INFLIGHT partitions as the
// ledger's entries are (InFlight), each by an item of its own under the
// payment's partition, L#<ref>: put while the operation awaits its
// answer, deleted with the write that ends that. Both formats' readers
// skip them; moving the record to the ledger deletes them.
const skLegacyInFlight = "L#"

// inFlightMarks adds to items the marks of the operations of after that
// await their answer and are not marked yet, and the deletion of every
// other stored mark (marked: those read with the record), whoever wrote
// the record since.
func (s *Store) inFlightMarks(items []types.TransactWriteItem, psp string, marked map[string]bool, after []payments.Entry, ttl types.AttributeValue) []types.TransactWriteItem {
	pk := pfxPayment + psp
	was := maps.Clone(marked)
	if was == nil {
		was = map[string]bool{}
	}
	for _, e := range after {
		if !e.Recoverable() {
			continue
		}
		if was[e.Ref] {
			delete(was, e.Ref)
			continue
		}
		it := itemKey(pk, skLegacyInFlight+e.Ref)
		it[attrGSI1PK] = str(inFlightPartition(psp))
		it[attrGSI1SK] = str(sortTime(e.Requested.At) + "#" + psp + "#" + e.Ref)
		setTTL(it, ttl)
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: it}})
	}
	for _, ref := range slices.Sorted(maps.Keys(was)) {
		items = append(items, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: itemKey(pk, skLegacyInFlight+ref)}})
	}
	return items
}

// historySK is the sort key of a legacy record's history line i.
func historySK(i int) string { return fmt.Sprintf("%s%010d", skHistory, i) }

// legacyLanded reports whether the legacy write with token had been
// applied (its answer lost, the SDK's retry failing its condition): META
// carries the token.
func (s *Store) legacyLanded(ctx context.Context, psp string, err error, token string) bool {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && len(tce.CancellationReasons) > 0 {
		if it := tce.CancellationReasons[0].Item; it != nil {
			return getS(it, attrWriteToken) == token
		}
	}
	it, gerr := s.getItem(ctx, pfxPayment+psp, skMeta)
	return gerr == nil && getS(it, attrWriteToken) == token
}

// claimTaken reports whether claim's key is held (the claim's own
// condition fails on it), for a write refused before its transaction: the
// claim is checked alone, nothing is written.
func (s *Store) claimTaken(ctx context.Context, claim idempotency.Record) (idempotency.Record, bool) {
	put, err := s.claimPut(claim, s.clock.Now())
	if err != nil {
		return idempotency.Record{}, false
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{
		ConditionCheck: &types.ConditionCheck{
			TableName: put.TableName, Key: itemKey(idemPK(claim.Scope, claim.Key), skIdem),
			ConditionExpression: put.ConditionExpression, ExpressionAttributeNames: put.ExpressionAttributeNames,
			ExpressionAttributeValues:           put.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		},
	}}})
	if err == nil {
		return idempotency.Record{}, false
	}
	return s.claimHeld(ctx, claim, err, 0)
}
