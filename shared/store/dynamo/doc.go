// Package dynamo is the production storage adapter: one DynamoDB table
// (single-table design) behind every storage port (tenant, idempotency,
// ratelimit, payments).
//
// # Table
//
// Partition key pk (S), sort key sk (S), two global secondary indexes —
// gsi1 (gsi1pk S / gsi1sk S, projection ALL) and gsi2 (gsi2pk S / gsi2sk S,
// projection INCLUDE st: the keys and a delivery's status) — TTL on the
// Number attribute ttl (Unix seconds), on-demand billing. CreateTable
// creates it.
//
// # Items
//
//	record              pk                        sk                      index pk (gsi1 unless named)        index sk
//	merchant            MERCHANT#<id>             META                    MERCHANTS                           MERCHANT#<id>
//	site                SITE#<id>                 META                    MERCHANT#<merchant>                 SITE#<id>
//	API key (by hash)   APIKEY#<hash>             META
//	API key (by owner)  MERCHANT#<merchant>       KEY#<keyId>
//	subscription        MERCHANT#<merchant>       SUB#<id>
//	listing shard counts MERCHANT#<merchant>      SHARDS  (dsh, esh: shards.go)
//	idempotency record  IDEM#<merchant>#<key>     KEY
//	rate-limit window   RATE#<bucket>             WINDOW
//	session             SESSION#<id>              META
//	payment head        PAYMENT#<pspReference>    HEAD                    gsi2 DUE#EXPIRY#<n> (expiring.go)   <expiresAt>#<psp>
//	payment entry       PAYMENT#<pspReference>    E#<operation ref>
//	payment fact        PAYMENT#<pspReference>    F#<at>#<fact id>
//	merchant event      EVENTLOG#<merchant>#<n>   <receivedAt>#<eventId>
//	notification event  EVENT#<id>                META                    PAYMENT#<psp>                       EVENT#<receivedAt>#<id>
//	unroutable entry    UNROUTABLE#EVENT#<n>      <receivedAt>#<eventId>
//	delivery            DELIVERY#<id>             META                    gsi2 MERCHANT#<m>#DELIVERIES#<n>    <createdAt>#<id>
//
// Partition keys are chosen so that one merchant at 10,000 payments/s
// stays under DynamoDB's 1,000 WCU/s and 3,000 RCU/s per partition key
// (docs/scale.md; shared/capacity checks it): every idempotency record is
// its own partition, a merchant's deliveries are write-sharded over gsi2
// partitions (webhooks.go) and its event history over table partitions
// (selfservice.go), as many as the merchant's own counts (shards.go: one
// each for a new merchant, raised by the operator ahead of traffic; up to
// DeliveryShards and EventLogShards at 10,000 payments/s), the unroutable
// list over UnroutableShards (n = FNV-1a(id) mod the count, the sizes the
// capacity model's: capacity.ShardsFor), and a rate-limit key above 500 requests/s
// counts in several windows (shared/ratelimit). The item builders
// (items.go) are exported so the capacity model sizes exactly the items
// written.
//
// Records are stored as JSON in the attribute data (times in UTC, the
// format version in the JSON: records.Format), next to the plain
// attributes conditions need: version and the Totals (payments), revokedAt (API
// keys), c and expiresAtN (rate-limit windows), and the idempotency record's
// fields as attributes (st, lease, leaseUntilN, expiresAtN, …) so Complete
// can update it in place. Items kept as attributes (the idempotency record,
// the listing shard counts) carry their format version in fmt. Attributes
// ending in N hold instants as exact decimal Unix seconds (nanosecond
// fraction) for comparisons in condition expressions; the same instants are
// also kept as RFC 3339 strings.
//
// # Access patterns
//
//   - The authentication hot path is one strongly consistent GetItem on
//     APIKEY#<hash>. Each key is written twice — by hash and under its
//     merchant — in one TransactWriteItems (both conditional on absence, so
//     hashes and per-merchant key ids are unique); revocation rewrites both
//     in one transaction. Listing a merchant's keys and subscriptions is a
//     strongly consistent Query of its partition.
//   - Merchants and a merchant's sites are listed through gsi1 (eventually
//     consistent, like every GSI read), so a site keeps one item and moves
//     between merchants by a plain overwrite.
//   - Idempotency Claim is one conditional PutItem (absent, expired, or in
//     progress with an ended lease) returning the existing item on failure
//     (ReturnValuesOnConditionCheckFailure ALL_OLD): one holding the
//     claim's own lease token (random per claim) is the claim itself,
//     applied before its answer was lost. Complete and Release are
//     conditional on the lease token.
//   - Rate-limit Hit is one UpdateItem ADD conditional on the count being
//     below the limit in a live window. Only when the window has expired
//     (TTL deletion lags) does a second conditional write restart it. Both
//     set wt to the call's token and the count refuses its own token, so a
//     hit applied whose answer was lost is not counted twice when the SDK
//     sends it again.
//   - A payment is a ledger (payments.go): its HEAD (the head as JSON
//     beside the plain attributes its conditions and deltas use: the
//     Totals, version, seq, owner, …), one E#<ref> item per operation and
//     one F#<at>#<id> item per timeline fact. A Write is one
//     TransactWriteItems: the HEAD put (conditional on its version) or
//     updated by a delta (conditional on the write's expectations), each
//     entry conditional on its version, the facts. HEAD and entries carry
//     wt, the writing call's random token: a write whose condition fails
//     on an item carrying its own token had been applied (its answer lost,
//     the SDK sent it again) and is reported done, not as a conflict the
//     caller would apply its change again for. GetPayment and GetEntries
//     are one strongly consistent GetItem and BatchGetItem, Timeline one
//     Query of the F# items.
//   - Listings (listing.go) read what they return: a page queries each
//     shard of its listing once, in parallel, with Limit = the page size
//     below the cursor's sort key (<createdAt>#<id>, newest first; the
//     unroutable list oldest first), and merges by sort key. A merchant's
//     event history (EVENTLOG#<merchant>#<n>, strongly consistent) is
//     EventLogShards Queries a page; its filters (pspReference,
//     eventCode) are applied while reading, so a rare match reads on in
//     the shards it is short in. A merchant's deliveries are DeliveryShards
//     gsi2 Queries (eventually consistent; a status filter is a
//     FilterExpression on the projected st) plus one strongly consistent
//     BatchGetItem per 100 deliveries of the page; a delivery whose status
//     moved since gsi2 saw it is left out. The unroutable list is
//     UnroutableShards Queries.
//   - Notification events (EVENT#<id>, listed per payment through gsi1
//     PAYMENT#<psp>) and webhook deliveries (DELIVERY#<id>) are described
//     in webhooks.go; both are versioned PutItems (an event kept
//     unroutable: a transaction with its list entry) that name their
//     writing call (versioned.go), so a write applied whose answer was lost is reported done,
//     not as a conflict (the caller would re-read and apply its change
//     again: an attempt or an arrival counted twice).
//
// Every base-table read is strongly consistent. Every item but the
// tenant's (merchants, sites, keys, subscriptions) carries ttl for
// DynamoDB's TTL deletion: idempotency records, rate-limit windows and
// sessions at their own expiry, payments CreatedAt +
// store.PaymentRetention (a delta write's items: its time + that, none
// before the head), events ReceivedAt +
// store.EventRetention, merchant events (the history) their CreatedAt (the
// event's first arrival) + store.EventRetention, deliveries CreatedAt +
// store.DeliveryRetention (docs/limits.md). Expiry is also checked in
// code where a lagging deletion matters (idempotency, rate limit,
// sessions, payment records).
// ConditionalCheckFailed maps to storeerr.ErrConflict, a missing item to
// storeerr.ErrNotFound, an item over 400 KB is refused before it is sent;
// errors name the operation and key but never a secret (API key hashes,
// lease tokens).
package dynamo
