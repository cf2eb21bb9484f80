package dynamo_test

import (
	"context"
	"encoding/json"
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
// merchant holds: one Query per shard, plus for deliveries one
// BatchGetItem per 100 deliveries of the page (none for an empty page).
func TestListingCallsPerPage(t *testing.T) {
	ctx := context.Background()
	s, c, _, _ := countingStore(t)
	for n := range 240 {
		if err := s.SaveDelivery(ctx, delivery("m_busy", n), 0); err != nil {
			t.Fatal(err)
		}
		if n < 40 {
			if err := s.PutMerchantEvent(ctx, merchantEvent("m_busy", n)); err != nil {
				t.Fatal(err)
			}
		}
		if n < 10 {
			if err := s.SaveEvent(ctx, unroutableEvent(n), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	cursor := &webhooks.DeliveryCursor{CreatedAt: delivery("m_busy", 200).CreatedAt, ID: delivery("m_busy", 200).ID}
	queries := func(n int) map[string]int { return map[string]int{"Query": n} }
	withGets := func(n, gets int) map[string]int { return map[string]int{"Query": n, "BatchGetItem": gets} }
	for _, tc := range []struct {
		name  string
		page  func() (int, error)
		items int
		want  map[string]int
	}{
		{"deliveries, empty merchant", func() (int, error) {
			ds, err := s.ListDeliveryPage(ctx, "m_none", webhooks.DeliveryQuery{Limit: 11})
			return len(ds), err
		}, 0, queries(dynamo.DeliveryShards)},
		{"deliveries, first page", func() (int, error) {
			ds, err := s.ListDeliveryPage(ctx, "m_busy", webhooks.DeliveryQuery{Limit: 11})
			return len(ds), err
		}, 11, withGets(dynamo.DeliveryShards, 1)},
		{"deliveries, after a cursor", func() (int, error) {
			ds, err := s.ListDeliveryPage(ctx, "m_busy", webhooks.DeliveryQuery{Limit: 11, After: cursor})
			return len(ds), err
		}, 11, withGets(dynamo.DeliveryShards, 1)},
		{"deliveries, one status", func() (int, error) {
			ds, err := s.ListDeliveryPage(ctx, "m_busy", webhooks.DeliveryQuery{Status: webhooks.StatusFailed, Limit: 11})
			return len(ds), err
		}, 11, withGets(dynamo.DeliveryShards, 1)},
		{"deliveries, the largest page (100 + 1)", func() (int, error) {
			ds, err := s.ListDeliveryPage(ctx, "m_busy", webhooks.DeliveryQuery{Limit: 101})
			return len(ds), err
		}, 101, withGets(dynamo.DeliveryShards, 2)},
		{"event history, empty merchant", func() (int, error) {
			es, err := s.ListMerchantEvents(ctx, "m_none", notifications.EventQuery{Limit: 11})
			return len(es), err
		}, 0, queries(dynamo.EventLogShards)},
		{"event history, first page", func() (int, error) {
			es, err := s.ListMerchantEvents(ctx, "m_busy", notifications.EventQuery{Limit: 11})
			return len(es), err
		}, 11, queries(dynamo.EventLogShards)},
		{"unroutable events", func() (int, error) {
			es, err := s.ListUnroutableEvents(ctx, 5)
			return len(es), err
		}, 5, queries(dynamo.UnroutableShards)},
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
		got, err := s.ListUnroutableEvents(ctx, limit)
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
	got, err := s.ListUnroutableEvents(ctx, 1)
	if err != nil || len(got) != 1 || got[0].ID != unroutableEvent(1).ID {
		t.Fatalf("after routing the oldest: %+v (%v), want %s first", got, err, unroutableEvent(1).ID)
	}
}

// BenchmarkListingPage measures a page of each listing on moto for an
// empty merchant and for one holding 10,000 items (loaded with
// BatchWriteItem through the adapter's item builders). It loads 20,000
// items, so it runs only with PAYSVC_BENCH_FULL=1:
//
//	PAYSVC_BENCH_FULL=1 go test -run '^$' -bench BenchmarkListingPage -benchtime 10x ./shared/store/dynamo/
func BenchmarkListingPage(b *testing.B) {
	if os.Getenv("PAYSVC_BENCH_FULL") == "" {
		b.Skip("set PAYSVC_BENCH_FULL=1 (loads 20,000 items into moto)")
	}
	ctx := context.Background()
	const items = 10_000
	type setup struct {
		s     *dynamo.Store
		calls *calls
	}
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
		return setup{dynamo.New(client, table, clock.NewFake(t0)), c}
	}
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
	const limit = 11 // the default page and one more
	for _, bc := range []struct {
		name string
		on   setup
		page func(s *dynamo.Store) (int, error)
	}{
		{"deliveries/empty", empty, func(s *dynamo.Store) (int, error) {
			ds, err := s.ListDeliveryPage(ctx, "m_big", webhooks.DeliveryQuery{Limit: limit})
			return len(ds), err
		}},
		{"deliveries/10000", deliveries, func(s *dynamo.Store) (int, error) {
			ds, err := s.ListDeliveryPage(ctx, "m_big", webhooks.DeliveryQuery{Limit: limit})
			return len(ds), err
		}},
		{"deliveries/10000/failed", deliveries, func(s *dynamo.Store) (int, error) {
			ds, err := s.ListDeliveryPage(ctx, "m_big", webhooks.DeliveryQuery{Status: webhooks.StatusFailed, Limit: limit})
			return len(ds), err
		}},
		{"events/empty", empty, func(s *dynamo.Store) (int, error) {
			es, err := s.ListMerchantEvents(ctx, "m_big", notifications.EventQuery{Limit: limit})
			return len(es), err
		}},
		{"events/10000", events, func(s *dynamo.Store) (int, error) {
			es, err := s.ListMerchantEvents(ctx, "m_big", notifications.EventQuery{Limit: limit})
			return len(es), err
		}},
		{"unroutable/empty", empty, func(s *dynamo.Store) (int, error) {
			es, err := s.ListUnroutableEvents(ctx, limit)
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
