package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks"
)

// calls counts the DynamoDB operations a client sends (each once, however
// often the SDK retries it).
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("countCalls",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c.mu.Lock()
			c.n[awsmiddleware.GetOperationName(ctx)]++
			c.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// take returns the counts since the last take and starts again.
func (c *calls) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

// countingStore is a store on a fresh table of moto's whose calls are
// counted, with the production shard counts unless opts say otherwise.
func countingStore(t *testing.T, opts ...dynamo.Option) (*dynamo.Store, *calls, *dynamodb.Client, string) {
	t.Helper()
	base, table := newTable(t)
	c := &calls{n: map[string]int{}}
	client := dynamodb.New(base.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, c.middleware) })
	return dynamo.New(client, table, clock.NewFake(t0), opts...), c, base, table
}

var listStatuses = []webhooks.Status{webhooks.StatusPending, webhooks.StatusFailed, webhooks.StatusDelivered}

// delivery n of merchant m: created n seconds after t0 (every third at the
// same instant as the one before, so ids break ties), its status taken in
// turn from listStatuses.
func delivery(m string, n int) webhooks.Delivery {
	at := t0.Add(time.Duration(n-n%3) * time.Second)
	return webhooks.Delivery{ID: fmt.Sprintf("msg_%s_%04d", m, n), MerchantID: m, SubscriptionID: "sub_1", EventID: fmt.Sprintf("evt_%d", n),
		EventCode: "AUTHORISATION", PSPReference: "PSP", Payload: json.RawMessage(`{}`), Status: listStatuses[n%len(listStatuses)],
		CreatedAt: at, UpdatedAt: at, Version: 1}
}

func merchantEvent(m string, n int) notifications.MerchantEvent {
	at := t0.Add(time.Duration(n-n%3) * time.Second)
	return notifications.MerchantEvent{ID: fmt.Sprintf("evt_%s_%04d", m, n), MerchantID: m, EventCode: "AUTHORISATION",
		PSPReference: "PSP", PaymentPSP: "PSP", Payload: json.RawMessage(`{}`), CreatedAt: at}
}

func unroutableEvent(n int) notifications.Event {
	at := t0.Add(time.Duration(n) * time.Second)
	return notifications.Event{ID: fmt.Sprintf("evt_u_%04d", n), Status: notifications.EventUnroutable, ReceivedAt: at, UpdatedAt: at,
		UnroutableAt: &at, UnroutableReason: "no merchant", Version: 1}
}

// A page of every listing costs a constant number of calls, whatever the
// merchant holds: its shard count (one GetItem), one Query per shard,
// plus for deliveries one BatchGetItem per 100 deliveries of the page
// (none for an empty page). A merchant created by PutMerchant has one
// shard of each listing until raised; one without counts of its own
// (created before them) the store's, DeliveryShards and EventLogShards.
func TestListingCallsPerPage(t *testing.T) {
	ctx := context.Background()
	s, c, _, _ := countingStore(t)
	for _, m := range []string{"m_small", "m_new", "m_raised"} {
		if err := s.PutMerchant(ctx, tenant.Merchant{ID: m, Name: m}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RaiseListingShards(ctx, "m_raised", 4, 2); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"m_busy", "m_small", "m_raised"} {
		for n := range 240 {
			if err := s.SaveDelivery(ctx, delivery(m, n), 0); err != nil {
				t.Fatal(err)
			}
			if n < 40 {
				if err := s.PutMerchantEvent(ctx, merchantEvent(m, n)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for n := range 10 {
		if err := s.SaveEvent(ctx, unroutableEvent(n), 0); err != nil {
			t.Fatal(err)
		}
	}
	cursor := &webhooks.DeliveryCursor{CreatedAt: delivery("m_busy", 200).CreatedAt, ID: delivery("m_busy", 200).ID}
	queries := func(n int) map[string]int { return map[string]int{"GetItem": 1, "Query": n} }
	withGets := func(n, gets int) map[string]int {
		return map[string]int{"GetItem": 1, "Query": n, "BatchGetItem": gets}
	}
	deliveries := func(m string, q webhooks.DeliveryQuery) func() (int, error) {
		return func() (int, error) {
			ds, err := s.ListDeliveryPage(ctx, m, q)
			return len(ds), err
		}
	}
	events := func(m string) func() (int, error) {
		return func() (int, error) {
			es, err := s.ListMerchantEvents(ctx, m, notifications.EventQuery{Limit: 11})
			return len(es), err
		}
	}
	for _, tc := range []struct {
		name  string
		page  func() (int, error)
		items int
		want  map[string]int
	}{
		{"deliveries, unknown merchant", deliveries("m_none", webhooks.DeliveryQuery{Limit: 11}), 0, queries(dynamo.DeliveryShards)},
		{"deliveries, new merchant", deliveries("m_new", webhooks.DeliveryQuery{Limit: 11}), 0, queries(1)},
		{"deliveries, small merchant", deliveries("m_small", webhooks.DeliveryQuery{Limit: 11}), 11, withGets(1, 1)},
		{"deliveries, raised merchant", deliveries("m_raised", webhooks.DeliveryQuery{Limit: 11}), 11, withGets(4, 1)},
		{"deliveries, first page", deliveries("m_busy", webhooks.DeliveryQuery{Limit: 11}), 11, withGets(dynamo.DeliveryShards, 1)},
		{"deliveries, after a cursor", deliveries("m_busy", webhooks.DeliveryQuery{Limit: 11, After: cursor}), 11, withGets(dynamo.DeliveryShards, 1)},
		{"deliveries, one status", deliveries("m_busy", webhooks.DeliveryQuery{Status: webhooks.StatusFailed, Limit: 11}), 11, withGets(dynamo.DeliveryShards, 1)},
		{"deliveries, the largest page (100 + 1)", deliveries("m_busy", webhooks.DeliveryQuery{Limit: 101}), 101, withGets(dynamo.DeliveryShards, 2)},
		{"event history, unknown merchant", events("m_none"), 0, queries(dynamo.EventLogShards)},
		{"event history, new merchant", events("m_new"), 0, queries(1)},
		{"event history, small merchant", events("m_small"), 11, queries(1)},
		{"event history, raised merchant", events("m_raised"), 11, queries(2)},
		{"event history, first page", events("m_busy"), 11, queries(dynamo.EventLogShards)},
		{"unroutable events", func() (int, error) {
			es, err := s.ListEvents(ctx, notifications.EventUnroutable, 5)
			return len(es), err
		}, 5, map[string]int{"Query": dynamo.UnroutableShards}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.take()
			n, err := tc.page()
			got := c.take()
			if err != nil || n != tc.items {
				t.Fatalf("%d items (%v), want %d", n, err, tc.items)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("calls %v, want %v", got, tc.want)
			}
		})
	}
}

// A merchant's shard counts start at one, are only raised, and survive
// the merchant's updates; a writer that still holds the count before a
// raise (another instance's cache) writes into a shard below the new
// count, so a listing read after the raise returns every item, in order.
func TestListingShardsOfAMerchant(t *testing.T) {
	ctx := context.Background()
	base, table := newTable(t)
	clk := clock.NewFake(t0)
	stale := dynamo.New(base, table, clk) // a writer whose cache keeps the first count
	other := dynamo.New(base, table, clk)
	if err := stale.PutMerchant(ctx, tenant.Merchant{ID: "m_a", Name: "A"}); err != nil {
		t.Fatal(err)
	}
	if got, err := stale.ListingShards(ctx, "m_a"); err != nil || got != (dynamo.ListingShards{Deliveries: 1, Events: 1, Own: true}) {
		t.Fatalf("a new merchant's counts: %+v, %v", got, err)
	}
	write := func(s *dynamo.Store, from, to int) {
		t.Helper()
		for n := from; n < to; n++ {
			if err := s.SaveDelivery(ctx, delivery("m_a", n), 0); err != nil {
				t.Fatal(err)
			}
			if err := s.PutMerchantEvent(ctx, merchantEvent("m_a", n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(stale, 0, 20) // one shard
	if got, err := other.RaiseListingShards(ctx, "m_a", 8, 4); err != nil || got != (dynamo.ListingShards{Deliveries: 8, Events: 4, Own: true}) {
		t.Fatalf("raise: %+v, %v", got, err)
	}
	write(stale, 20, 40) // still one shard: its cache holds the count for a minute
	write(other, 40, 60) // eight and four
	if err := other.PutMerchant(ctx, tenant.Merchant{ID: "m_a", Name: "A, renamed"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*dynamo.Store{stale, other} {
		if got, err := s.ListingShards(ctx, "m_a"); err != nil || got.Deliveries != 8 || got.Events != 4 {
			t.Fatalf("counts after the merchant's update: %+v, %v; want 8 and 4 kept", got, err)
		}
		ds, err := s.ListDeliveryPage(ctx, "m_a", webhooks.DeliveryQuery{Limit: 100})
		if err != nil || len(ds) != 60 || ds[0].ID != delivery("m_a", 59).ID || ds[59].ID != delivery("m_a", 0).ID {
			t.Fatalf("deliveries after the raise: %d, %v; want all 60, newest first", len(ds), err)
		}
		es, err := s.ListMerchantEvents(ctx, "m_a", notifications.EventQuery{Limit: 100})
		if err != nil || len(es) != 60 {
			t.Fatalf("events after the raise: %d, %v; want all 60", len(es), err)
		}
	}
	// Only raised: a lower count would drop the items above it.
	for _, tc := range []struct {
		merchant   string
		deliveries int
		events     int
	}{
		{"m_a", 4, 0}, {"m_a", 0, 2}, {"m_before", 64, 0}, {"m_before", 0, 16}, // m_before: no counts of its own (the store's 128 and 32)
	} {
		if _, err := other.RaiseListingShards(ctx, tc.merchant, tc.deliveries, tc.events); !errors.Is(err, dynamo.ErrLowerShards) {
			t.Errorf("RaiseListingShards(%s, %d, %d) = %v, want ErrLowerShards", tc.merchant, tc.deliveries, tc.events, err)
		}
	}
	if got, err := other.RaiseListingShards(ctx, "m_before", 256, 0); err != nil || got != (dynamo.ListingShards{Deliveries: 256, Events: dynamo.EventLogShards, Own: true}) {
		t.Fatalf("raising a merchant without counts of its own: %+v, %v", got, err)
	}
}

// Paging through a listing whose items are spread over shards, with
// creation times shared by several items, returns every item once, in
// order, whatever the page size and filter (a filter matching a few items
// reads on in several rounds; one matching none reads every shard to its
// end).
func TestListingPagesAcrossShards(t *testing.T) {
	ctx := context.Background()
	s, _, _, _ := countingStore(t, dynamo.WithDeliveryShards(8), dynamo.WithEventLogShards(4))
	const n = 60
	var all []webhooks.Delivery
	var events []notifications.MerchantEvent
	for i := range n {
		d := delivery("m_1", i)
		if i%20 == 7 { // a rare status: its pages take several rounds
			d.Status = webhooks.StatusDisabled
		}
		if err := s.SaveDelivery(ctx, d, 0); err != nil {
			t.Fatal(err)
		}
		all = append(all, d)
		e := merchantEvent("m_1", i)
		if i%20 == 3 { // a rare code
			e.EventCode = "REFUND"
		}
		if err := s.PutMerchantEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	// d 5 moved from failed to delivered: listed once, under its new status.
	moved := all[5]
	moved.Status, moved.Version = webhooks.StatusDelivered, 2
	if err := s.SaveDelivery(ctx, moved, 1); err != nil {
		t.Fatal(err)
	}
	all[5] = moved
	all = webhooks.NewestFirst(all, 0)
	events = notifications.NewestFirst(events, 0)
	for _, tc := range []struct {
		status webhooks.Status
		limit  int
	}{{"", 1}, {"", 7}, {"", 100}, {webhooks.StatusFailed, 3}, {webhooks.StatusDelivered, 8}, {webhooks.StatusDisabled, 1},
		{webhooks.StatusDisabled, 2}, {webhooks.StatusPending, 100}} {
		t.Run(fmt.Sprintf("deliveries %q by %d", tc.status, tc.limit), func(t *testing.T) {
			var want []string
			for _, d := range all {
				if tc.status == "" || d.Status == tc.status {
					want = append(want, d.ID)
				}
			}
			var got []string
			var after *webhooks.DeliveryCursor
			for pages := 0; ; pages++ {
				if pages > n {
					t.Fatalf("more than %d pages", n)
				}
				page, err := s.ListDeliveryPage(ctx, "m_1", webhooks.DeliveryQuery{Status: tc.status, Limit: tc.limit, After: after})
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range page {
					got = append(got, d.ID)
				}
				if len(page) < tc.limit {
					break
				}
				last := page[len(page)-1]
				after = &webhooks.DeliveryCursor{CreatedAt: last.CreatedAt, ID: last.ID}
			}
			if !slices.Equal(got, want) {
				t.Errorf("paged:\n got %v\nwant %v", got, want)
			}
		})
	}
	for _, tc := range []struct {
		code  string
		limit int
	}{{"", 1}, {"", 4}, {"", 11}, {"REFUND", 1}, {"REFUND", 2}, {"CAPTURE", 5}} {
		t.Run(fmt.Sprintf("events %q by %d", tc.code, tc.limit), func(t *testing.T) {
			limit := tc.limit
			var got, want []string
			for _, e := range events {
				if tc.code == "" || e.EventCode == tc.code {
					want = append(want, e.ID)
				}
			}
			var after *notifications.EventCursor
			for {
				page, err := s.ListMerchantEvents(ctx, "m_1", notifications.EventQuery{Limit: limit, After: after, EventCode: tc.code})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, eventIDs(page)...)
				if len(page) < limit {
					break
				}
				last := page[len(page)-1]
				after = &notifications.EventCursor{CreatedAt: last.CreatedAt, ID: last.ID}
			}
			if !slices.Equal(got, want) {
				t.Errorf("paged:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// The unroutable list is spread over UnroutableShards partitions, listed
// oldest first across them, and an event leaves it when it is routed.
func TestUnroutableSharded(t *testing.T) {
	ctx := context.Background()
	s, _, client, table := countingStore(t)
	const n = 40
	for i := range n {
		if err := s.SaveEvent(ctx, unroutableEvent(i), 0); err != nil {
			t.Fatal(err)
		}
	}
	parts := map[string]int{}
	pages := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			if pk, _ := dynamo.Keys(it); strings.HasPrefix(pk, "UNROUTABLE#") {
				parts[pk]++
			}
		}
	}
	busiest := slices.Max(slices.Collect(maps.Values(parts)))
	if len(parts) < n/2 || busiest > 3 || parts["UNROUTABLE#EVENT"] != 0 {
		t.Errorf("%d entries in %d partitions (busiest %d): %v; want them spread over UNROUTABLE#EVENT#<n>", n, len(parts), busiest, parts)
	}
	for _, limit := range []int{0, 1, 15} {
		got, err := s.ListEvents(ctx, notifications.EventUnroutable, limit)
		if err != nil {
			t.Fatal(err)
		}
		want := n
		if limit > 0 {
			want = limit
		}
		if len(got) != want {
			t.Fatalf("limit %d: %d events, want %d", limit, len(got), want)
		}
		for i, e := range got {
			if e.ID != unroutableEvent(i).ID {
				t.Fatalf("limit %d: event %d is %s, want %s (oldest first)", limit, i, e.ID, unroutableEvent(i).ID)
			}
		}
	}
	routed := unroutableEvent(0)
	routed.Status, routed.MerchantID, routed.Version = notifications.EventReceived, "m_1", 2
	if err := s.SaveEvent(ctx, routed, 1); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListEvents(ctx, notifications.EventUnroutable, 1)
	if err != nil || len(got) != 1 || got[0].ID != unroutableEvent(1).ID {
		t.Fatalf("after routing the oldest: %+v (%v), want %s first", got, err, unroutableEvent(1).ID)
	}
}

// BenchmarkListingPage measures a page of each listing on moto for an
// empty merchant and for one holding 10,000 items (loaded with
// BatchWriteItem through the adapter's item builders), at one shard (a
// merchant as created) and at the counts sized for 10,000 payments/s. It
// loads 40,000 items, so it runs only with PAYSVC_BENCH_FULL=1:
//
//	PAYSVC_BENCH_FULL=1 go test -run '^$' -bench BenchmarkListingPage -benchtime 10x ./shared/store/dynamo/
func BenchmarkListingPage(b *testing.B) {
	if os.Getenv("PAYSVC_BENCH_FULL") == "" {
		b.Skip("set PAYSVC_BENCH_FULL=1 (loads 40,000 items into moto)")
	}
	ctx := context.Background()
	const items = 10_000
	type setup struct {
		s     *dynamo.Store
		calls *calls
	}
	// load is a table holding the merchant m_small, at one shard of each
	// listing (as PutMerchant creates it), and items built by build (the
	// merchant m_big's, without counts of its own: 128 and 32 shards, or
	// m_small's).
	load := func(b *testing.B, build func(i int) (dynamo.Item, error)) setup {
		base, table := newTable(b)
		c := &calls{n: map[string]int{}}
		client := dynamodb.New(base.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, c.middleware) })
		var batch []types.WriteRequest
		flush := func() {
			req := map[string][]types.WriteRequest{table: batch}
			for len(req) > 0 {
				out, err := base.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: req})
				if err != nil {
					b.Fatal(err)
				}
				req = out.UnprocessedItems
			}
			batch = batch[:0]
		}
		for i := range items {
			if build == nil {
				break
			}
			it, err := build(i)
			if err != nil {
				b.Fatal(err)
			}
			batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
			if len(batch) == 25 {
				flush()
			}
		}
		if len(batch) > 0 {
			flush()
		}
		s := dynamo.New(client, table, clock.NewFake(t0))
		if err := s.PutMerchant(ctx, tenant.Merchant{ID: "m_small", Name: "Small"}); err != nil {
			b.Fatal(err)
		}
		return setup{s, c}
	}
	const limit = 11 // the default page and one more
	empty := load(b, nil)
	deliveries := load(b, func(i int) (dynamo.Item, error) {
		d := delivery("m_big", i)
		d.CreatedAt = t0.Add(time.Duration(i) * time.Millisecond)
		return dynamo.DeliveryItem(d, dynamo.DeliveryShards)
	})
	events := load(b, func(i int) (dynamo.Item, error) {
		e := merchantEvent("m_big", i)
		e.CreatedAt = t0.Add(time.Duration(i) * time.Millisecond)
		return dynamo.MerchantEventItem(e, dynamo.EventLogShards)
	})
	smallDeliveries := load(b, func(i int) (dynamo.Item, error) {
		d := delivery("m_small", i)
		d.CreatedAt = t0.Add(time.Duration(i) * time.Millisecond)
		return dynamo.DeliveryItem(d, 1)
	})
	smallEvents := load(b, func(i int) (dynamo.Item, error) {
		e := merchantEvent("m_small", i)
		e.CreatedAt = t0.Add(time.Duration(i) * time.Millisecond)
		return dynamo.MerchantEventItem(e, 1)
	})
	deliveryPage := func(m string, status webhooks.Status) func(s *dynamo.Store) (int, error) {
		return func(s *dynamo.Store) (int, error) {
			ds, err := s.ListDeliveryPage(ctx, m, webhooks.DeliveryQuery{Status: status, Limit: limit})
			return len(ds), err
		}
	}
	eventPage := func(m string) func(s *dynamo.Store) (int, error) {
		return func(s *dynamo.Store) (int, error) {
			es, err := s.ListMerchantEvents(ctx, m, notifications.EventQuery{Limit: limit})
			return len(es), err
		}
	}
	for _, bc := range []struct {
		name string
		on   setup
		page func(s *dynamo.Store) (int, error)
	}{
		// a merchant at one shard of each listing (every merchant created
		// since per-merchant counts, until raised)
		{"deliveries/1-shard/empty", empty, deliveryPage("m_small", "")},
		{"deliveries/1-shard/10000", smallDeliveries, deliveryPage("m_small", "")},
		{"deliveries/1-shard/10000/failed", smallDeliveries, deliveryPage("m_small", webhooks.StatusFailed)},
		{"events/1-shard/empty", empty, eventPage("m_small")},
		{"events/1-shard/10000", smallEvents, eventPage("m_small")},
		// a merchant at the counts sized for 10,000 payments/s
		{"deliveries/128-shards/empty", empty, deliveryPage("m_big", "")},
		{"deliveries/128-shards/10000", deliveries, deliveryPage("m_big", "")},
		{"deliveries/128-shards/10000/failed", deliveries, deliveryPage("m_big", webhooks.StatusFailed)},
		{"events/32-shards/empty", empty, eventPage("m_big")},
		{"events/32-shards/10000", events, eventPage("m_big")},
		{"unroutable/empty", empty, func(s *dynamo.Store) (int, error) {
			es, err := s.ListEvents(ctx, notifications.EventUnroutable, limit)
			return len(es), err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bc.on.calls.take()
			for b.Loop() {
				if _, err := bc.page(bc.on.s); err != nil {
					b.Fatal(err)
				}
			}
			n := 0
			for _, v := range bc.on.calls.take() {
				n += v
			}
			b.ReportMetric(float64(n)/float64(b.N), "calls/op")
		})
	}
}

// A delivery whose status moved out of the filter after gsi2 saw it is left
// out of a status page, and the page is still full: it reads on below its
// last entry. (The stale index entry is simulated by an item whose st says
// failed and whose record says delivered.)
func TestDeliveryPageSkipsMovedStatus(t *testing.T) {
	ctx := context.Background()
	s, c, client, table := countingStore(t, dynamo.WithDeliveryShards(4))
	var failed []string
	for i := range 6 {
		d := delivery("m_1", 3*i) // distinct creation times
		d.Status = webhooks.StatusFailed
		if i == 5 { // the newest: moved to delivered, its index entry not yet
			d.Status = webhooks.StatusDelivered
			it, err := dynamo.DeliveryItem(d, 4)
			if err != nil {
				t.Fatal(err)
			}
			it["st"] = &types.AttributeValueMemberS{Value: string(webhooks.StatusFailed)}
			rawPut(t, client, table, it)
			continue
		}
		if err := s.SaveDelivery(ctx, d, 0); err != nil {
			t.Fatal(err)
		}
		failed = append([]string{d.ID}, failed...)
	}
	c.take()
	page, err := s.ListDeliveryPage(ctx, "m_1", webhooks.DeliveryQuery{Status: webhooks.StatusFailed, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range page {
		got = append(got, d.ID)
	}
	if !slices.Equal(got, failed[:3]) {
		t.Errorf("page %v, want %v (the moved delivery left out, the page full)", got, failed[:3])
	}
	if calls := c.take(); calls["BatchGetItem"] != 2 || calls["Query"] < 8 {
		t.Errorf("calls %v, want two rounds: 2 × 4 Queries at least and 2 BatchGetItem", calls)
	}
}
