package dynamo

// The item builders of the adapter, exported so the capacity model
// (shared/capacity) sizes and places exactly the items the adapter writes:
// the adapter's own writes go through these functions, and
// TestItemBuildersMatchStoredItems checks on moto that what an update
// leaves stored is what the builder returns.

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks"
)

// Item is one DynamoDB item as the adapter stores it.
type Item = map[string]types.AttributeValue

// MaxItemBytes is DynamoDB's item size limit (400 KB).
const MaxItemBytes = 400 * 1024

// Index is one global secondary index of the table: its name, its
// partition and sort key attributes, and its projection (All, or the keys
// plus Include).
type Index struct {
	Name, PK, SK string
	All          bool     // projection ALL
	Include      []string // projection INCLUDE (KEYS_ONLY when empty and not All)
}

// Indexes are the table's global secondary indexes (template.yaml and
// CreateTable): gsi1 projects every attribute (its readers decode the
// record from the entry); gsi2, the write-sharded time-ordered listing
// index (listing.go), projects the keys and a delivery's status.
var Indexes = []Index{
	{Name: indexGSI1, PK: attrGSI1PK, SK: attrGSI1SK, All: true},
	{Name: indexGSI2, PK: attrGSI2PK, SK: attrGSI2SK, Include: []string{attrStatus}},
}

// DeliveryShards is how many gsi2 partitions a merchant's deliveries are
// spread over (write sharding; a page of ListDeliveryPage queries each
// once). A delivery's shard is a hash of its id and its gsi2 key
// (<createdAt>#<id>) does not change with its status, so a delivery is
// indexed once on creation and its entry (keys and status, ~0.2 KB: 1
// unit) is rewritten in place when its status moves. Sized by the capacity
// model (docs/scale.md, capacity.ShardsFor): one merchant at 10,000
// payments/s writes ~63,000 such index units/s (~31,600 deliveries/s, a
// creation and about one status move each), ~500 per shard on average.
// Writers and readers must agree on it, and it can only be raised: a
// delivery stays in the shard it was written to.
const DeliveryShards = 128

// EventLogShards is how many partitions a merchant's event history is
// spread over (write sharding; a page of ListMerchantEvents queries each
// once). An event's shard is a hash of its id. Sized by the capacity
// model (docs/scale.md, capacity.ShardsFor): one merchant at 10,000
// payments/s routes ~15,800 events/s, each written once as a ~0.9 KB item
// (1 unit): ~500 units/s per shard on average. Writers and readers must
// agree on it, and it can only be raised: an entry stays in the shard it
// was written to.
const EventLogShards = 32

// UnroutableShards is how many partitions the unroutable list
// (UNROUTABLE#EVENT#<shard>) is spread over; an entry's shard is a hash of
// its event id. Sized by the capacity model (capacity.ShardsFor) for every
// notification of one merchant at 10,000 payments/s arriving for an
// unknown merchant account (~15,800 events/s, each entry written in a
// transaction: 2 units per KB). Writers and readers must agree on it, and
// it can only be raised: an entry stays in the shard it was written to.
const UnroutableShards = 128

// Keys returns an item's primary key.
func Keys(it Item) (pk, sk string) { return getS(it, attrPK), getS(it, attrSK) }

// IndexKey returns the item's partition and sort key in the named index;
// ok is false when the item is not in that index (sparse index).
func IndexKey(it Item, index string) (pk, sk string, ok bool) {
	if ix := indexNamed(index); ix != nil {
		pk, sk = getS(it, ix.PK), getS(it, ix.SK)
	}
	return pk, sk, pk != "" && sk != ""
}

// indexNamed is the index of Indexes named name (nil: none).
func indexNamed(name string) *Index {
	for i := range Indexes {
		if Indexes[i].Name == name {
			return &Indexes[i]
		}
	}
	return nil
}

// IndexEntry returns the item's entry in the named index as DynamoDB
// stores it (the projection: every attribute, or the table and index keys
// plus the included attributes); ok is false when the item is not in that
// index.
func IndexEntry(it Item, index string) (Item, bool) {
	if _, _, ok := IndexKey(it, index); !ok { // and so the index exists
		return nil, false
	}
	ix := indexNamed(index)
	if ix.All {
		return it, true
	}
	entry := Item{}
	for _, name := range append([]string{attrPK, attrSK, ix.PK, ix.SK}, ix.Include...) {
		if v, ok := it[name]; ok {
			entry[name] = v
		}
	}
	return entry, true
}

// ItemSize is an item's size as DynamoDB meters it: the UTF-8 length of
// every attribute name plus the size of its value (strings: UTF-8 length;
// numbers: 1 byte per two significant digits plus 1; booleans and nulls: 1;
// lists and maps: 3 bytes plus their elements, 1 byte per element).
func ItemSize(it Item) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize is 1 byte per two significant digits, plus 1 (leading and
// trailing zeros are not significant).
func numberSize(s string) int {
	s, _, _ = strings.Cut(strings.ToLower(strings.TrimLeft(s, "+-")), "e")
	digits := strings.Trim(strings.Replace(s, ".", "", 1), "0")
	return (len(digits)+1)/2 + 1
}

// SessionItem is the item PutSession writes for sess.
func SessionItem(sess payments.Session) (Item, error) {
	if sess.ID == "" {
		return nil, errEmpty("id")
	}
	rec := records.FromSession(sess)
	it, err := dataItem(pfxSession+sess.ID, skMeta, rec)
	if err != nil {
		return nil, err
	}
	it[attrTTL] = ttlOf(rec.ExpiresAt)
	return it, nil
}

// EventItem is the item SaveEvent writes for e.
func EventItem(e notifications.Event) (Item, error) {
	if e.ID == "" {
		return nil, errEmpty("id")
	}
	it, err := dataItem(pfxEvent+e.ID, skMeta, records.FromEvent(e))
	if err != nil {
		return nil, err
	}
	it[attrGSI1PK] = str(pfxPayment + e.PaymentPSP)
	it[attrGSI1SK] = str(pfxEvent + sortTime(e.ReceivedAt) + "#" + e.ID)
	it[attrVersion] = num(e.Version)
	stampVersion(it, e.Version) // the saving call's (versionSlots)
	it[attrTTL] = ttlOf(e.ReceivedAt.Add(store.EventRetention))
	return it, nil
}

// DeliveryItem is the item SaveDelivery writes for d: in gsi2 under its
// merchant's delivery shard of shards (DeliveryIndexPartition), sorted by
// creation time and id, with its status in st (projected into gsi2 for
// status filters).
func DeliveryItem(d webhooks.Delivery, shards int) (Item, error) {
	switch {
	case d.ID == "":
		return nil, errEmpty("id")
	case d.MerchantID == "":
		return nil, errEmpty("merchantId")
	}
	it, err := dataItem(pfxDelivery+d.ID, skMeta, records.FromDelivery(d))
	if err != nil {
		return nil, err
	}
	it[attrGSI2PK] = str(DeliveryIndexPartition(d.MerchantID, d.ID, shards))
	it[attrGSI2SK] = str(listingSK(d.CreatedAt, d.ID))
	it[attrStatus] = str(string(d.Status))
	it[attrVersion] = num(d.Version)
	stampVersion(it, d.Version) // the saving call's (versionSlots)
	it[attrTTL] = ttlOf(d.CreatedAt.Add(store.DeliveryRetention))
	return it, nil
}

// DeliveryIndexPartition is the gsi2 partition of a merchant's delivery:
// MERCHANT#<merchant>#DELIVERIES#<shard>, shard = FNV-1a(id) mod shards.
func DeliveryIndexPartition(merchantID, deliveryID string, shards int) string {
	return DeliveryShardPartition(merchantID, shardOf(deliveryID, shards))
}

// DeliveryShardPartition is shard number shard of a merchant's deliveries
// in gsi2.
func DeliveryShardPartition(merchantID string, shard int) string {
	return pfxMerchant + merchantID + pfxDeliveryShard + strconv.Itoa(shard)
}

// ListedItem is the list entry of e (a copy of the event) that SaveEvent
// writes while e is unroutable, or once it is account-level: in the shard
// UNROUTABLE#EVENT#<n> (or ACCOUNT#EVENT#<n>) of shards (ListedPartition),
// sorted by arrival.
func ListedItem(e notifications.Event, shards int) (Item, error) {
	if e.ID == "" {
		return nil, errEmpty("id")
	}
	it, err := dataItem(ListedPartition(e.Status, shardOf(e.ID, shards)), unroutableSK(e), records.FromEvent(e))
	if err != nil {
		return nil, err
	}
	it[attrTTL] = ttlOf(e.ReceivedAt.Add(store.EventRetention))
	return it, nil
}

// ListedPartition is shard number shard of status's list:
// UNROUTABLE#EVENT#<shard> (or ACCOUNT#EVENT#<shard> for an account-level
// event); an event's shard is FNV-1a(id) mod the shard count (shardOf).
func ListedPartition(status notifications.EventStatus, shard int) string {
	if status == notifications.EventAccount {
		return pkAccount + "#" + strconv.Itoa(shard)
	}
	return pkUnroutable + "#" + strconv.Itoa(shard)
}

// MerchantEventItem is the item PutMerchantEvent writes for e: in its
// merchant's event history shard of shards (EventLogPartition), expiring
// store.EventRetention after the event's first arrival.
func MerchantEventItem(e notifications.MerchantEvent, shards int) (Item, error) {
	switch {
	case e.ID == "":
		return nil, errEmpty("id")
	case e.MerchantID == "":
		return nil, errEmpty("merchantId")
	}
	rec := records.FromMerchantEvent(e)
	it, err := dataItem(EventLogPartition(e.MerchantID, e.ID, shards), listingSK(rec.CreatedAt, e.ID), rec)
	if err != nil {
		return nil, err
	}
	it[attrTTL] = ttlOf(rec.CreatedAt.Add(store.EventRetention))
	return it, nil
}

// EventLogPartition is the partition of a merchant's event:
// EVENTLOG#<merchant>#<shard>, shard = FNV-1a(event id) mod shards.
func EventLogPartition(merchantID, eventID string, shards int) string {
	return EventLogShardPartition(merchantID, shardOf(eventID, shards))
}

// EventLogShardPartition is shard number shard of a merchant's event
// history.
func EventLogShardPartition(merchantID string, shard int) string {
	return pfxEventLog + merchantID + "#" + strconv.Itoa(shard)
}

// shardOf is FNV-1a(id) mod shards.
func shardOf(id string, shards int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % uint32(max(shards, 1)))
}

// IdempotencyItem is the item of an idempotency record: what Claim writes
// for an in-progress record, and what Complete leaves for a completed one.
func IdempotencyItem(rec idempotency.Record) (Item, error) {
	if rec.Scope == "" || rec.Key == "" {
		return nil, errEmpty("scope or key")
	}
	rec = records.FromIdempotency(rec).ToIdempotency() // times in UTC
	it := withFormat(idemKey(rec.Scope, rec.Key))
	it[attrScope], it[attrKey], it[attrFP], it[attrStatus] = str(rec.Scope), str(rec.Key), str(rec.Fingerprint), str(string(rec.Status))
	it[attrLeaseTill], it[attrLeaseN] = rfc3339(rec.LeaseUntil), instant(rec.LeaseUntil)
	it[attrExpiresAt], it[attrExpiresN], it[attrTTL] = rfc3339(rec.ExpiresAt), instant(rec.ExpiresAt), ttlOf(rec.ExpiresAt)
	if rec.LeaseToken != "" {
		it[attrLease] = str(rec.LeaseToken)
	}
	if rec.Response != nil {
		raw, err := json.Marshal(records.FromResponse(rec.Response))
		if err != nil {
			return nil, fmt.Errorf("encode response: %w", err)
		}
		it[attrResponse] = str(string(raw))
	}
	return it, nil
}

// RateWindowItem is the rate-limit window item of bucket as Hit leaves it
// after counting `count` requests.
func RateWindowItem(bucket string, count int, expiresAt time.Time) Item {
	it := rateKey(bucket)
	it[attrCount] = num(int64(count))
	it[attrExpiresN], it[attrExpiresAt], it[attrTTL] = instant(expiresAt), rfc3339(expiresAt), ttlOf(expiresAt)
	it[attrWriteToken] = str(writeTokenPlaceholder) // the last Hit's (Hit sets its own)
	return it
}

// MerchantItem is the item PutMerchant writes.
func MerchantItem(m tenant.Merchant) (Item, error) {
	it, err := dataItem(pfxMerchant+m.ID, skMeta, records.FromMerchant(m))
	if err != nil {
		return nil, err
	}
	it[attrGSI1PK], it[attrGSI1SK] = str(gsiMerchants), str(pfxMerchant+m.ID)
	return it, nil
}

// SiteItem is the item PutSite writes.
func SiteItem(site tenant.Site) (Item, error) {
	it, err := dataItem(pfxSite+site.ID, skMeta, records.FromSite(site))
	if err != nil {
		return nil, err
	}
	it[attrGSI1PK], it[attrGSI1SK] = str(pfxMerchant+site.MerchantID), str(pfxSite+site.ID)
	return it, nil
}

// SubscriptionItem is the item PutSubscription writes.
func SubscriptionItem(sub tenant.Subscription) (Item, error) {
	return dataItem(pfxMerchant+sub.MerchantID, pfxSub+sub.ID, records.FromSubscription(sub))
}
