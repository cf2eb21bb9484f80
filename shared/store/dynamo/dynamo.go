package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/ratelimit"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// Compile-time checks that Store implements every port.
var (
	_ tenant.Store      = (*Store)(nil)
	_ idempotency.Store = (*Store)(nil)
	_ ratelimit.Store   = (*Store)(nil)
	_ payments.Store    = (*Store)(nil)
)

// Key and index attribute names (the table schema; see doc.go).
const (
	attrPK     = "pk"
	attrSK     = "sk"
	attrGSI1PK = "gsi1pk"
	attrGSI1SK = "gsi1sk"
	attrGSI2PK = "gsi2pk"
	attrGSI2SK = "gsi2sk"
	attrTTL    = "ttl"
	indexGSI1  = "gsi1"
	indexGSI2  = "gsi2"
)

// Other attribute names.
const (
	attrData      = "data"      // the record as JSON
	attrVersion   = "version"   // payments: optimistic-locking version
	attrHash      = "hash"      // API key (by owner): the key's hash
	attrRevokedAt = "revokedAt" // API keys: RFC 3339, present once revoked
	attrCount     = "c"         // rate-limit window: hits counted
	attrExpiresAt = "expiresAt" // RFC 3339 expiry (idempotency, rate limit)
	attrExpiresN  = "expiresAtN"
	attrScope     = "scope" // idempotency record fields…
	attrKey       = "ikey"
	attrFP        = "fp"
	attrStatus    = "st"
	attrLease     = "lease"
	attrLeaseTill = "leaseUntil"
	attrLeaseN    = "leaseUntilN"
	attrResponse  = "resp" // completed idempotency record: Response as JSON
	// attrFormat is the format version of an item kept as attributes
	// (records.Version; absent: 1); a record in data carries its own.
	attrFormat = "fmt"
)

// Store is the DynamoDB adapter. It is safe for concurrent use.
type Store struct {
	client      *dynamodb.Client
	table       string
	clock       clock.Clock
	shards      int // delivery shards of gsi2
	eventShards int // partitions of a merchant's event history
	unroutable  int // partitions of the unroutable list
	// shardCache: merchants' listing shard counts, for writers (shards.go).
	shardCache shardCache
}

// Option configures New.
type Option func(*Store)

// WithDeliveryShards spreads the deliveries of a merchant without shard
// counts of its own (shards.go) over n gsi2 partitions instead of
// DeliveryShards. Every writer and reader of a table must use the same n;
// tests use a few to keep listings quick on moto.
func WithDeliveryShards(n int) Option {
	return func(s *Store) { s.shards = max(n, 1) }
}

// WithEventLogShards spreads the event history of a merchant without
// shard counts of its own (shards.go) over n partitions instead of
// EventLogShards. Every writer and reader of a table must use the same n;
// tests use a few to keep listings quick on moto.
func WithEventLogShards(n int) Option {
	return func(s *Store) { s.eventShards = max(n, 1) }
}

// WithUnroutableShards spreads the unroutable list over n partitions
// instead of UnroutableShards. Every writer and reader of a table must use
// the same n.
func WithUnroutableShards(n int) Option {
	return func(s *Store) { s.unroutable = max(n, 1) }
}

// New returns a Store on table. clk supplies "now" for expiry checks that
// take no explicit time (sessions, rate-limit windows); nil means
// clock.System.
func New(client *dynamodb.Client, table string, clk clock.Clock, opts ...Option) *Store {
	if clk == nil {
		clk = clock.System{}
	}
	s := &Store{client: client, table: table, clock: clk, shards: DeliveryShards, eventShards: EventLogShards, unroutable: UnroutableShards}
	for _, o := range opts {
		o(s)
	}
	return s
}

// attribute value constructors.

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// instant encodes t as exact decimal Unix seconds, for numeric comparisons
// in condition expressions.
func instant(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: unixDecimal(t)}
}

// unixDecimal renders t as Unix seconds with a nanosecond fraction, exactly
// (DynamoDB numbers keep 38 significant digits).
func unixDecimal(t time.Time) string {
	sec, nsec := t.Unix(), int64(t.Nanosecond())
	switch {
	case nsec == 0:
		return strconv.FormatInt(sec, 10)
	case sec >= 0:
		return fmt.Sprintf("%d.%09d", sec, nsec)
	default: // sec + nsec/1e9 = -((-sec-1) + (1e9-nsec)/1e9)
		return fmt.Sprintf("-%d.%09d", -sec-1, 1_000_000_000-nsec)
	}
}

// ttlOf is t as Unix seconds, rounded up, for the ttl attribute.
func ttlOf(t time.Time) types.AttributeValue {
	sec := t.Unix()
	if t.Nanosecond() > 0 {
		sec++
	}
	return num(sec)
}

// rfc3339 encodes t exactly, in UTC.
func rfc3339(t time.Time) types.AttributeValue { return str(t.UTC().Format(time.RFC3339Nano)) }

// itemKey returns the primary key of an item.
func itemKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(pk), attrSK: str(sk)}
}

// getS returns item[name] as a string ("" if absent or not a string).
func getS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// getTime parses item[name] as an RFC 3339 time (zero if absent).
func getTime(item map[string]types.AttributeValue, name string) (time.Time, error) {
	s := getS(item, name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("attribute %s: %w", name, err)
	}
	return t.UTC(), nil
}

// dataItem returns the item for a record stored as JSON in attrData.
func dataItem(pk, sk string, v any) (map[string]types.AttributeValue, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	item := itemKey(pk, sk)
	item[attrData] = str(string(raw))
	return item, nil
}

// decodeData decodes the JSON record of an item.
func decodeData[T any](item map[string]types.AttributeValue) (T, error) {
	var v T
	raw, ok := item[attrData].(*types.AttributeValueMemberS)
	if !ok {
		return v, fmt.Errorf("item %s/%s has no %s attribute", getS(item, attrPK), getS(item, attrSK), attrData)
	}
	if err := json.Unmarshal([]byte(raw.Value), &v); err != nil {
		return v, fmt.Errorf("decode item %s/%s: %w", getS(item, attrPK), getS(item, attrSK), err)
	}
	return v, nil
}

// withFormat sets the format version of an item kept as attributes.
func withFormat(it Item) Item {
	it[attrFormat] = num(records.Version)
	return it
}

// checkFormat fails with storeerr.ErrUnknownFormat when an item kept as
// attributes is of a format version this release does not read.
func checkFormat(it Item) error {
	if _, ok := it[attrFormat]; !ok {
		return nil // version 1
	}
	if err := records.CheckVersion(strconv.FormatInt(getN(it, attrFormat), 10)); err != nil {
		return fmt.Errorf("item %s/%s: %w", getS(it, attrPK), getS(it, attrSK), err)
	}
	return nil
}

// getItem reads an item with a strongly consistent read; storeerr.ErrNotFound
// if it is absent.
func (s *Store) getItem(ctx context.Context, pk, sk string) (map[string]types.AttributeValue, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            itemKey(pk, sk),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, storeerr.ErrNotFound
	}
	return out.Item, nil
}

// getData reads an item and decodes its JSON record.
func getData[T any](ctx context.Context, s *Store, pk, sk string) (T, error) {
	item, err := s.getItem(ctx, pk, sk)
	if err != nil {
		var zero T
		return zero, err
	}
	return decodeData[T](item)
}

// getRecord reads the JSON record R of item pk/sk (strongly consistent;
// storeerr.ErrNotFound if absent) and converts it with to; errors name
// what, formatted with args.
func getRecord[R, D any](ctx context.Context, s *Store, pk, sk string, to func(R) D, what string, args ...any) (D, error) {
	rec, err := getData[R](ctx, s, pk, sk)
	if err != nil {
		var zero D
		return zero, wrapErr(err, what, args...)
	}
	return to(rec), nil
}

// listRecords runs query in to the end and converts every item's JSON
// record R with to, sorted by id (nil: in the query's order); errors name
// what, formatted with args.
func listRecords[R, D any](ctx context.Context, s *Store, in *dynamodb.QueryInput, to func(R) D, id func(D) string, what string, args ...any) ([]D, error) {
	in.TableName = aws.String(s.table)
	out := []D{}
	for pages := dynamodb.NewQueryPaginator(s.client, in); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		var ds []D
		if err == nil {
			ds, err = decodeAll(page.Items, to)
		}
		if err != nil {
			return nil, wrapErr(err, what, args...)
		}
		out = append(out, ds...)
	}
	if id != nil {
		slices.SortFunc(out, func(a, b D) int { return strings.Compare(id(a), id(b)) })
	}
	return out, nil
}

// decodeAll decodes the JSON record R of every item and converts it with to.
func decodeAll[R, D any](items []map[string]types.AttributeValue, to func(R) D) ([]D, error) {
	out := make([]D, 0, len(items))
	for _, it := range items {
		rec, err := decodeData[R](it)
		if err != nil {
			return nil, err
		}
		out = append(out, to(rec))
	}
	return out, nil
}

// wrapErr is err (nil stays nil) in the words of what, formatted with args.
func wrapErr(err error, what string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("dynamo: "+what+": %w", append(args, err)...)
}

// putItem writes an item unconditionally.
func (s *Store) putItem(ctx context.Context, item map[string]types.AttributeValue) error {
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item})
	return err
}

// partitionQuery queries the items of partition pk whose sort key starts
// with prefix, strongly consistent.
func partitionQuery(pk, prefix string) *dynamodb.QueryInput {
	in := indexQuery(pk, prefix)
	in.IndexName, in.ConsistentRead = nil, aws.Bool(true)
	in.ExpressionAttributeNames = map[string]string{"#pk": attrPK, "#sk": attrSK}
	return in
}

// indexQuery queries gsi1 for items with gsi1pk and a gsi1sk starting with
// prefix (eventually consistent, as every GSI read).
func indexQuery(gsi1pk, prefix string) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		IndexName:                 aws.String(indexGSI1),
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :prefix)"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrGSI1PK, "#sk": attrGSI1SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(gsi1pk), ":prefix": str(prefix)},
	}
}

// conditionFailed reports whether err is a failed condition expression and
// returns the item's old values when DynamoDB sent them.
func conditionFailed(err error) (old map[string]types.AttributeValue, failed bool) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf.Item, true
	}
	return nil, false
}

// cancelledItem returns the stored item the first write of a cancelled
// transaction met (its ReturnValuesOnConditionCheckFailure), nil if none
// came back.
func cancelledItem(err error) map[string]types.AttributeValue {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && len(tce.CancellationReasons) > 0 {
		return tce.CancellationReasons[0].Item
	}
	return nil
}

// wroteItems reports whether a cancelled transaction's conditions failed on
// exactly the items it puts (want, in order): the SDK sent again a
// transaction DynamoDB had applied but whose answer was lost (DynamoDB
// itself answers such a retry by its ClientRequestToken within ten
// minutes; moto, which CI runs against, does not), so it did land. Items
// that differ — another key with this hash or ID, or the key's state
// before a revocation — are a real conflict.
func wroteItems(err error, want ...map[string]types.AttributeValue) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != len(want) {
		return false
	}
	for i, r := range tce.CancellationReasons {
		if r.Item == nil || getS(r.Item, attrData) != getS(want[i], attrData) {
			return false
		}
	}
	return true
}

// failedOn returns the stored item a failed condition met: old, the
// values DynamoDB sent back, or when it sent none the item pk/sk read now
// (nil: there is none, or it cannot be read and err says why).
func (s *Store) failedOn(ctx context.Context, old map[string]types.AttributeValue, pk, sk string) (map[string]types.AttributeValue, error) {
	if len(old) > 0 {
		return old, nil
	}
	it, err := s.getItem(ctx, pk, sk)
	if errors.Is(err, storeerr.ErrNotFound) {
		return nil, nil
	}
	return it, err
}

// transactionConditionFailed reports whether a transaction was cancelled
// because one of its conditions failed.
func transactionConditionFailed(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	for _, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			return true
		}
	}
	return strings.Contains(aws.ToString(tce.Message), "ConditionalCheckFailed")
}

// transactionConflict reports whether a transaction was cancelled because
// another transaction was changing one of its items at the same moment
// (reason TransactionConflict, or TransactionConflictException): the write
// lost a race, as a failed condition does, and may be retried.
func transactionConflict(err error) bool {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == "TransactionConflict" {
				return true
			}
		}
	}
	var tc *types.TransactionConflictException
	return errors.As(err, &tc)
}

// sized is a builder's item and error, refusing an item over DynamoDB's
// 400 KB limit with an error that says so (DynamoDB's own is a generic
// ValidationException).
func sized(it Item, err error) (Item, error) {
	if n := ItemSize(it); err == nil && n > MaxItemBytes {
		return nil, fmt.Errorf("item of %d bytes exceeds DynamoDB's %d-byte limit", n, MaxItemBytes)
	}
	return it, err
}

// errEmpty reports a missing identifier.
func errEmpty(field string) error { return fmt.Errorf("empty %s", field) }
