// Package dynamo is the production storage adapter: one DynamoDB table
// (single-table design) behind every storage port (tenant, idempotency,
// ratelimit, payments).
//
// # Table
//
// Partition key pk (S), sort key sk (S), one global secondary index gsi1
// (gsi1pk S / gsi1sk S, projection ALL), TTL on the Number attribute ttl
// (Unix seconds), on-demand billing. CreateTable creates it.
//
// # Items
//
//	record              pk                        sk                    gsi1pk               gsi1sk
//	merchant            MERCHANT#<id>             META                  MERCHANTS            MERCHANT#<id>
//	site                SITE#<id>                 META                  MERCHANT#<merchant>  SITE#<id>
//	API key (by hash)   APIKEY#<hash>             META
//	API key (by owner)  MERCHANT#<merchant>       KEY#<keyId>
//	subscription        MERCHANT#<merchant>       SUB#<id>
//	idempotency record  IDEM#<merchant>           KEY#<idempotencyKey>
//	rate-limit window   RATE#<bucket>             WINDOW
//	session             SESSION#<id>              META
//	payment             PAYMENT#<pspReference>    META
//
// Records are stored as JSON in the attribute data (times in UTC), next to
// the plain attributes conditions need: version (payments), revokedAt (API
// keys), c and expiresAtN (rate-limit windows), and the idempotency record's
// fields as attributes (st, lease, leaseUntilN, expiresAtN, …) so Complete
// can update it in place. Attributes ending in N hold instants as exact
// decimal Unix seconds (nanosecond fraction) for comparisons in condition
// expressions; the same instants are also kept as RFC 3339 strings.
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
//     (ReturnValuesOnConditionCheckFailure ALL_OLD); Complete and Release
//     are conditional on the lease token.
//   - Rate-limit Hit is one UpdateItem ADD conditional on the count being
//     below the limit in a live window. Only when the window has expired
//     (TTL deletion lags) does a second conditional write restart it.
//   - SavePayment is one PutItem conditional on the stored version.
//   - Notification events (EVENT#<id>, listed per payment through gsi1
//     PAYMENT#<psp>) and webhook deliveries (DELIVERY#<id>, listed per
//     merchant and status through gsi1 MERCHANT#<m> / DELIVERY#<status>#…)
//     are described in webhooks.go; both are versioned PutItems.
//
// Every base-table read is strongly consistent. Idempotency records,
// rate-limit windows and sessions carry ttl for DynamoDB's TTL deletion,
// and their expiry is also checked in code, since TTL deletion lags.
// ConditionalCheckFailed maps to storeerr.ErrConflict, a missing item to
// storeerr.ErrNotFound; errors name the operation and key but never a secret
// (API key hashes, lease tokens).
package dynamo
