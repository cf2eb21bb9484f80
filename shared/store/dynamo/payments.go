package dynamo

import (
	"context"
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

// pfxPayment starts a payment's partition key (see doc.go).
const pfxPayment = "PAYMENT#"

// A payment is a ledger in its partition PAYMENT#<pspReference>:
//
//	HEAD        the head (payments.Head) as JSON in data, and beside it the
//	            attributes its conditions and deltas use: the Totals
//	            (cap capf ref reff capb refb rev revf auf), seq, version,
//	            mid and sid (owner), auth (the authorisation's state), cur
//	            (the amount's currency, "" while unknown), pre (a
//	            pre-authorisation), ua (updated at), wt (the last writer's
//	            token)
//	E#<ref>     an entry (payments.Entry) as JSON, its version, wt
//	F#<at>#<id> a timeline fact, at in fixed-width UTC, so facts sort in
//	            time order
//
// A Write is one TransactWriteItems: the head put whole (conditional on
// its version) or updated by the delta (conditional on Expect), each entry
// conditional on its version, the facts. Every item carries a ttl: the
// head's (CreatedAt + store.PaymentRetention) for the items of a write that
// puts the head, the write's time + store.PaymentRetention for those of a
// delta write (which does not know CreatedAt), so no item of a payment
// expires before its head. A write on a head past its retention fails its
// condition (the payment reads as absent), and a new payment under the
// pspReference of one past its retention whose HEAD TTL has not deleted
// yet deletes that one first (purgeExpired).
const (
	skHead      = "HEAD"
	skEntry     = "E#"
	skFact      = "F#"
	attrCapt    = "cap"
	attrCaptIF  = "capf"
	attrRefd    = "ref"
	attrRefdIF  = "reff"
	attrCaptble = "capb"
	attrRefble  = "refb"
	attrRev     = "rev"
	attrRevIF   = "revf"
	attrAmtIF   = "auf"
	attrRel     = "rel"
	attrExp     = "exp"
	attrCanIF   = "canf"
	attrSeq     = "seq"
	attrMid     = "mid"
	attrSid     = "sid"
	attrAuth    = "auth"
	attrCur     = "cur"
	attrPreAuth = "pre"
	attrUpdated = "ua"
	// attrLineItems is present (true) on the head of a payment whose method
	// needs lineItems on a partial capture or refund (Head.NeedsLineItems).
	attrLineItems = "li"
	// attrWriteToken names the call that wrote an item (random per call):
	// a write whose condition fails on an item carrying its own token had
	// landed — DynamoDB applied it, its answer was lost and the SDK sent
	// it again — and is reported done, not as a conflict.
	attrWriteToken = "wt"
	// condLive is the condition of a write on a stored head: not past its
	// retention (#ttl, compared with :now, ttlOf the store's clock), as a
	// payment past it reads as absent though DynamoDB's TTL has not
	// deleted it yet.
	condLive = "(attribute_not_exists(#ttl) OR #ttl > :now)"
)

// totalAttrs names each Totals field's attribute.
var totalAttrs = []struct {
	name string
	get  func(*payments.Totals) *int64
}{
	{attrCapt, func(t *payments.Totals) *int64 { return &t.Captured }},
	{attrCaptIF, func(t *payments.Totals) *int64 { return &t.CapturesInFlight }},
	{attrRefd, func(t *payments.Totals) *int64 { return &t.Refunded }},
	{attrRefdIF, func(t *payments.Totals) *int64 { return &t.RefundsInFlight }},
	{attrCaptble, func(t *payments.Totals) *int64 { return &t.Capturable }},
	{attrRefble, func(t *payments.Totals) *int64 { return &t.Refundable }},
	{attrRev, func(t *payments.Totals) *int64 { return &t.Reversals }},
	{attrRevIF, func(t *payments.Totals) *int64 { return &t.ReversalsInFlight }},
	{attrAmtIF, func(t *payments.Totals) *int64 { return &t.AmountUpdatesInFlight }},
	{attrRel, func(t *payments.Totals) *int64 { return &t.Released }},
	{attrExp, func(t *payments.Totals) *int64 { return &t.Expired }},
	{attrCanIF, func(t *payments.Totals) *int64 { return &t.CancelsInFlight }},
}

// HeadItem is the HEAD item of head h (its token a placeholder of the
// right size, as the capacity model counts it).
func HeadItem(h payments.Head) (Item, error) {
	if h.PSPReference == "" {
		return nil, errEmpty("pspReference")
	}
	it, err := dataItem(pfxPayment+h.PSPReference, skHead, records.FromHead(h))
	if err != nil {
		return nil, err
	}
	t := h.Totals
	for _, a := range totalAttrs {
		it[a.name] = num(*a.get(&t))
	}
	it[attrVersion], it[attrSeq] = num(h.Version), num(h.Seq)
	it[attrMid], it[attrSid], it[attrAuth], it[attrCur] = str(h.MerchantID), str(h.SiteID), str(string(h.AuthStatus())), str(h.Amount.Currency)
	it[attrPreAuth] = &types.AttributeValueMemberBOOL{Value: h.AuthorisationType == payments.AuthorisationPreAuth}
	if h.NeedsLineItems() {
		it[attrLineItems] = &types.AttributeValueMemberBOOL{Value: true}
	}
	it[attrUpdated] = rfc3339(h.UpdatedAt)
	it[attrWriteToken] = str(writeTokenPlaceholder)
	at, due := h.ExpiryDue()
	setExpiryIndex(it, h.PSPReference, at, due)
	setTTL(it, headTTL(h))
	return it, nil
}

// EntryItem is the item of entry e of payment psp.
func EntryItem(psp string, e payments.Entry, ttl types.AttributeValue) (Item, error) {
	it, err := dataItem(pfxPayment+psp, skEntry+e.Ref, records.FromEntry(e))
	if err != nil {
		return nil, err
	}
	it[attrVersion], it[attrWriteToken] = num(e.Version), str(writeTokenPlaceholder)
	if e.Recoverable() { // in gsi1 while it awaits its answer: InFlight
		it[attrGSI1PK] = str(InFlightPartition(psp))
		it[attrGSI1SK] = str(sortTime(e.Requested.At) + "#" + psp + "#" + e.Ref)
	}
	setTTL(it, ttl)
	return it, nil
}

// FactItem is the item of fact f of payment psp.
func FactItem(psp string, f payments.Fact, ttl types.AttributeValue) (Item, error) {
	it, err := dataItem(pfxPayment+psp, factSK(f), records.FromFact(f))
	if err != nil {
		return nil, err
	}
	setTTL(it, ttl)
	return it, nil
}

func factSK(f payments.Fact) string {
	return skFact + sortTime(f.At) + "#" + factStage(f) + "#" + f.ID
}

// factStage orders the facts of one instant as they happen: a payment's
// answer and its binding, an operation's request, its answer, then
// notifications (DynamoDB sorts by key; the embedded store keeps the order
// written).
func factStage(f payments.Fact) string {
	switch {
	case f.Origin == payments.OriginNotification:
		return "4"
	case strings.HasSuffix(f.Kind, "-requested"):
		return "2"
	case f.Kind == "bound":
		return "1"
	case f.Kind == "payment" || f.Kind == "details" || f.Kind == "pending":
		return "0"
	}
	return "3"
}

// headTTL is the ttl of head h's payment (nil for a head without
// CreatedAt: kept).
func headTTL(h payments.Head) types.AttributeValue {
	if h.CreatedAt.IsZero() {
		return nil
	}
	return ttlOf(h.CreatedAt.Add(store.PaymentRetention))
}

// decodeHeadItem decodes a HEAD item: its data, then the attributes the
// deltas move.
func decodeHeadItem(it map[string]types.AttributeValue) (payments.Head, error) {
	r, err := decodeData[records.PaymentHead](it)
	if err != nil {
		return payments.Head{}, err
	}
	h := r.ToHead()
	for _, a := range totalAttrs {
		*a.get(&h.Totals) = getN(it, a.name)
	}
	h.Version, h.Seq = getN(it, attrVersion), getN(it, attrSeq)
	if ua, err := getTime(it, attrUpdated); err == nil && !ua.IsZero() {
		h.UpdatedAt = ua
	}
	return h, nil
}

// GetPayment returns payment psp's head (strongly consistent), or
// storeerr.ErrNotFound (also once it is past its retention, before
// DynamoDB's TTL deletes it): one GetItem of HEAD.
func (s *Store) GetPayment(ctx context.Context, psp string) (payments.Head, error) {
	it, err := s.getItem(ctx, pfxPayment+psp, skHead)
	var h payments.Head
	if err == nil {
		h, err = decodeHeadItem(it)
	}
	if err == nil && !h.CreatedAt.IsZero() && !h.CreatedAt.Add(store.PaymentRetention).After(s.clock.Now()) {
		err = storeerr.ErrNotFound
	}
	if err != nil {
		return payments.Head{}, fmt.Errorf("dynamo: get payment %q: %w", psp, err)
	}
	return h, nil
}

// GetEntries returns those of payment psp's entries refs that exist: one
// BatchGetItem.
func (s *Store) GetEntries(ctx context.Context, psp string, refs ...string) ([]payments.Entry, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	pk := pfxPayment + psp
	keys := make([]map[string]types.AttributeValue, 0, len(refs))
	for _, ref := range refs {
		keys = append(keys, itemKey(pk, skEntry+ref))
	}
	out, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		s.table: {Keys: keys, ConsistentRead: aws.Bool(true)},
	}})
	var es []payments.Entry
	if err == nil && len(out.Responses[s.table]) > 0 {
		es, err = decodeAll(out.Responses[s.table], records.Entry.ToEntry)
	}
	if err != nil {
		return nil, wrapErr(err, "get entries of payment %q", psp)
	}
	return es, nil
}

// Timeline returns at most limit facts of payment psp after cursor (the
// sort key of the last one read), oldest first: one Query of at most
// limit+1 items.
func (s *Store) Timeline(ctx context.Context, psp, cursor string, limit int) ([]payments.Fact, string, error) {
	pk := pfxPayment + psp
	in := partitionQuery(pk, skFact)
	in.TableName, in.Limit = aws.String(s.table), aws.Int32(int32(limit+1))
	if cursor != "" {
		if !strings.HasPrefix(cursor, skFact) {
			return nil, "", fmt.Errorf("dynamo: timeline of payment %q: bad cursor", psp)
		}
		in.ExclusiveStartKey = itemKey(pk, cursor)
	}
	out, err := s.client.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: timeline of payment %q: %w", psp, err)
	}
	items, next := out.Items, ""
	if len(items) > limit {
		items, next = items[:limit], getS(items[limit-1], attrSK)
	}
	facts, err := decodeAll(items, records.Fact.ToFact)
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: timeline of payment %q: %w", psp, err)
	}
	return facts, next, nil
}

// Write makes payment write w: one TransactWriteItems.
func (s *Store) Write(ctx context.Context, w payments.Write) error {
	if w.PSP == "" {
		return fmt.Errorf("dynamo: write payment: %w", errEmpty("pspReference"))
	}
	token := writeToken()
	items, err := s.writeItems(w, token)
	if err != nil {
		return fmt.Errorf("dynamo: write payment %q: %w", w.PSP, err)
	}
	for attempt := 0; ; attempt++ {
		_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return nil
		}
		if transactionConflict(err) {
			return fmt.Errorf("dynamo: write payment %q: %w", w.PSP, storeerr.ErrConflict)
		}
		if !transactionConditionFailed(err) {
			return fmt.Errorf("dynamo: write payment %q: %w", w.PSP, err)
		}
		if s.landed(ctx, w, err, token) {
			return nil
		}
		if attempt == 0 && w.Put != nil && w.Put.Version == 1 {
			// A new payment over an expired one not deleted yet: that one
			// is deleted first.
			again, rerr := s.purgeExpired(ctx, w.PSP)
			if rerr != nil {
				return fmt.Errorf("dynamo: write payment %q: %w", w.PSP, rerr)
			}
			if again {
				continue
			}
		}
		return fmt.Errorf("dynamo: write payment %q: %w", w.PSP, storeerr.ErrConflict)
	}
}

// landed reports whether the write with token had been applied: the head
// (or its first entry, when the head is not written) carries the token.
func (s *Store) landed(ctx context.Context, w payments.Write, err error, token string) bool {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range tce.CancellationReasons {
			if r.Item != nil && getS(r.Item, attrWriteToken) == token {
				return true
			}
		}
	}
	it, gerr := s.getItem(ctx, pfxPayment+w.PSP, skHead)
	return gerr == nil && getS(it, attrWriteToken) == token
}

// writeItems are the transaction's writes of w.
func (s *Store) writeItems(w payments.Write, token string) ([]types.TransactWriteItem, error) {
	pk := pfxPayment + w.PSP
	ttl := ttlOf(s.clock.Now().Add(store.PaymentRetention))
	var items []types.TransactWriteItem
	if w.Put != nil {
		it, err := sized(HeadItem(*w.Put)) // the token is the placeholder's size
		if err != nil {
			return nil, err
		}
		it[attrWriteToken] = str(token)
		// A new head: an expired one still stored is deleted first
		// (purgeExpired); else the head read, not past its retention.
		cond, names, values := versionCondition(w.Put.Version - 1)
		if w.Put.Version != 1 {
			cond = aws.String(*cond + " AND " + condLive)
			names["#ttl"], values[":now"] = attrTTL, ttlOf(s.clock.Now())
		}
		items = append(items, condPut(s.table, it, cond, names, values))
		if t := headTTL(*w.Put); t != nil {
			ttl = t
		}
	} else {
		items = append(items, types.TransactWriteItem{Update: s.deltaUpdate(pk, w, token)})
	}
	for _, e := range w.Entries {
		it, err := sized(EntryItem(w.PSP, e, ttl))
		if err != nil {
			return nil, err
		}
		it[attrWriteToken] = str(token)
		cond, names, values := versionCondition(e.Version - 1)
		items = append(items, condPut(s.table, it, cond, names, values))
	}
	for _, f := range w.Facts {
		it, err := sized(FactItem(w.PSP, f, ttl))
		if err != nil {
			return nil, err
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: it}})
	}
	if len(items) > 100 {
		return nil, fmt.Errorf("%d writes in one transaction (at most 100)", len(items))
	}
	return items, nil
}

// deltaUpdate is the head's update of a Delta write: the Totals moved, the
// version and sequence advanced, conditional on Expect.
func (s *Store) deltaUpdate(pk string, w payments.Write, token string) *types.Update {
	names := map[string]string{"#pk": attrPK, "#v": attrVersion, "#ua": attrUpdated, "#wt": attrWriteToken, "#ttl": attrTTL}
	values := map[string]types.AttributeValue{":one": num(1), ":ua": rfc3339(w.At), ":wt": str(token), ":now": ttlOf(s.clock.Now())}
	set := []string{"#v = #v + :one", "#ua = :ua", "#wt = :wt"}
	d := w.Delta
	for i, a := range totalAttrs {
		if v := *a.get(&d); v != 0 {
			n, val := fmt.Sprintf("#t%d", i), fmt.Sprintf(":t%d", i)
			names[n], values[val] = a.name, num(v)
			set = append(set, n+" = "+n+" + "+val)
		}
	}
	if w.SeqStep != 0 {
		names["#seq"], values[":seqstep"] = attrSeq, num(w.SeqStep)
		set = append(set, "#seq = #seq + :seqstep")
	}
	cond := []string{"attribute_exists(#pk)", condLive}
	e := w.Expect
	eq := func(attr string, v types.AttributeValue) {
		n, val := "#c"+attr, ":c"+attr
		names[n], values[val] = attr, v
		cond = append(cond, n+" = "+val)
	}
	if e.MerchantID != "" {
		eq(attrMid, str(e.MerchantID))
	}
	if e.SiteID != "" {
		eq(attrSid, str(e.SiteID))
	}
	if e.Authorised {
		eq(attrAuth, str(string(payments.StateAuthorised)))
	}
	if e.NoReversal {
		eq(attrRev, num(0))
		eq(attrRevIF, num(0))
	}
	if e.NoAmountUpdate {
		eq(attrAmtIF, num(0))
	}
	if e.NotReleased {
		eq(attrRel, num(0))
		eq(attrCanIF, num(0))
	}
	if e.PreAuth {
		eq(attrPreAuth, &types.AttributeValueMemberBOOL{Value: true})
	}
	if e.Uncaptured {
		eq(attrCapt, num(0))
		eq(attrCaptIF, num(0))
	}
	if e.Seq != nil {
		eq(attrSeq, num(*e.Seq))
	}
	// Once the amount is known (cur set): its currency and the minimums.
	var known []string
	names["#cur"], values[":unknown"] = attrCur, str("")
	if e.Currency != "" {
		values[":cur"] = str(e.Currency)
		known = append(known, "#cur = :cur")
	}
	if e.Capturable != nil {
		names["#capb"], values[":capb"] = attrCaptble, num(*e.Capturable)
		known = append(known, "#capb >= :capb")
	}
	if e.Refundable != nil {
		names["#refb"], values[":refb"] = attrRefble, num(*e.Refundable)
		known = append(known, "#refb >= :refb")
	}
	// Without lineItems, a method that needs them takes only the whole
	// (payments.Expect.NoLineItems).
	switch {
	case e.NoLineItems == payments.OpCapture && e.Capturable != nil:
		names["#li"], names["#licap"], names["#licapf"], names["#licapb"] = attrLineItems, attrCapt, attrCaptIF, attrCaptble
		values[":zero"] = num(0)
		known = append(known, "(attribute_not_exists(#li) OR (#licap = :zero AND #licapf = :zero AND #licapb <= :capb))")
	case e.NoLineItems == payments.OpRefund && e.Refundable != nil:
		names["#li"], names["#licap"] = attrLineItems, attrCapt
		known = append(known, "(attribute_not_exists(#li) OR #licap <= :refb)")
	}
	if len(known) > 0 {
		cond = append(cond, "(#cur = :unknown OR ("+strings.Join(known, " AND ")+"))")
	} else {
		delete(names, "#cur")
		delete(values, ":unknown")
	}
	return &types.Update{
		TableName: aws.String(s.table), Key: itemKey(pk, skHead),
		UpdateExpression:                    aws.String("SET " + strings.Join(set, ", ")),
		ConditionExpression:                 aws.String(strings.Join(cond, " AND ")),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// getN returns item[name] as an integer (0 if absent or not a number).
func getN(item map[string]types.AttributeValue, name string) int64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

// setTTL sets item's ttl unless ttl is nil.
func setTTL(item map[string]types.AttributeValue, ttl types.AttributeValue) {
	if ttl != nil {
		item[attrTTL] = ttl
	}
}
