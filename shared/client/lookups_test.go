package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"

	"github.com/yp/paysvc/shared/client"
)

// listing serves n items newest first (ids item_n … item_1), paged by
// limit and startingAfter as the API does, under both list paths; failAt
// > 0 fails that page (1-based).
type listing struct {
	n, failAt int
	queries   []string
}

func (l *listing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.queries = append(l.queries, r.URL.RawQuery)
	if len(l.queries) == l.failAt {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"errorCode":"yp_9000","message":"internal error"}`))
		return
	}
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit == 0 {
		limit = 10
	}
	next := l.n
	if a := q.Get("startingAfter"); a != "" {
		fmt.Sscanf(a, "item_%d", &next)
		next--
	}
	var data []map[string]any
	for i := next; i > 0 && len(data) < limit; i-- {
		data = append(data, map[string]any{"id": fmt.Sprintf("item_%d", i), "eventCode": q.Get("eventCode"), "status": q.Get("status")})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"data": data, "hasMore": next-len(data) > 0})
}

// The iterators fetch page after page as the loop goes on, stop fetching
// when the loop stops, and end with a failed page's error.
func TestAllEventsAndDeliveries(t *testing.T) {
	for _, tc := range []struct {
		name        string
		n, failAt   int
		filter      client.EventFilter
		stopAfter   int // 0: range to the end
		wantIDs     int // items yielded before the end (or the stop)
		wantQueries []string
		wantErr     bool
	}{
		{name: "every page", n: 5, filter: client.EventFilter{ListParams: client.ListParams{Limit: 2}, EventCode: "CAPTURE"}, wantIDs: 5,
			wantQueries: []string{"eventCode=CAPTURE&limit=2", "eventCode=CAPTURE&limit=2&startingAfter=item_4", "eventCode=CAPTURE&limit=2&startingAfter=item_2"}},
		{name: "an exact last page", n: 4, filter: client.EventFilter{ListParams: client.ListParams{Limit: 2}}, wantIDs: 4,
			wantQueries: []string{"limit=2", "limit=2&startingAfter=item_3"}},
		{name: "the loop stops: no more pages", n: 5, filter: client.EventFilter{ListParams: client.ListParams{Limit: 2}}, stopAfter: 3, wantIDs: 3,
			wantQueries: []string{"limit=2", "limit=2&startingAfter=item_4"}},
		{name: "from startingAfter", n: 5, filter: client.EventFilter{ListParams: client.ListParams{StartingAfter: "item_2"}}, wantIDs: 1,
			wantQueries: []string{"startingAfter=item_2"}},
		{name: "empty", n: 0, wantQueries: []string{""}},
		{name: "a page fails", n: 5, failAt: 2, filter: client.EventFilter{ListParams: client.ListParams{Limit: 2}}, wantIDs: 2, wantErr: true,
			wantQueries: []string{"limit=2", "limit=2&startingAfter=item_4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &listing{n: tc.n, failAt: tc.failAt}
			srv := httptest.NewServer(l)
			defer srv.Close()
			c := client.New(srv.URL, "yp_test_k", client.WithRetries(0, 0, 0))
			var ids []string
			var gotErr error
			for ev, err := range c.AllEvents(context.Background(), tc.filter) {
				if err != nil {
					gotErr = err
					break
				}
				ids = append(ids, ev.ID)
				if len(ids) == tc.stopAfter {
					break
				}
			}
			if len(ids) != tc.wantIDs || !slices.Equal(l.queries, tc.wantQueries) || (gotErr != nil) != tc.wantErr {
				t.Fatalf("ids %v, queries %q, err %v", ids, l.queries, gotErr)
			}
			if tc.wantErr && !errors.Is(gotErr, client.ErrServer) {
				t.Fatalf("err %v", gotErr)
			}
			for i, id := range ids {
				if want := tc.n - i; tc.filter.StartingAfter == "" && id != fmt.Sprintf("item_%d", want) {
					t.Fatalf("ids %v: not newest first", ids)
				}
			}
		})
	}

	// Deliveries page the same way, under their own path and filter.
	l := &listing{n: 3}
	srv := httptest.NewServer(l)
	defer srv.Close()
	c := client.New(srv.URL, "yp_test_k")
	var got []string
	for d, err := range c.AllWebhookDeliveries(context.Background(), client.DeliveryFilter{ListParams: client.ListParams{Limit: 2}, Status: "failed"}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.ID+" "+d.Status)
	}
	if !slices.Equal(got, []string{"item_3 failed", "item_2 failed", "item_1 failed"}) || len(l.queries) != 2 {
		t.Fatalf("deliveries %q, queries %q", got, l.queries)
	}
}

// A payment's action is typed, and its JSON is kept as sent for the
// checkout component.
func TestAction(t *testing.T) {
	const action = `{"authorisationToken":"sim.1","paymentData":"Ab02b4c0!c2ltOjE=","paymentMethodType":"scheme","subtype":"challenge",` +
		`"token":"eyJ0aHJlZURTU2VydmVyVHJhbnNJRCI6IjEifQ==","type":"threeDS2","unknownToThisClient":{"x":1}}`
	var res client.PaymentResult
	if err := json.Unmarshal([]byte(`{"resultCode":"ChallengeShopper","action":`+action+`,"merchantReference":"order-1"}`), &res); err != nil {
		t.Fatal(err)
	}
	a := res.Action
	if res.ResultCode != client.ResultChallengeShopper || a == nil || a.Type != client.ActionThreeDS2 || a.Subtype != "challenge" ||
		a.PaymentData != "Ab02b4c0!c2ltOjE=" || a.Token == "" || a.AuthorisationToken != "sim.1" || string(a.Raw) != action {
		t.Fatalf("%+v", a)
	}
	out, err := json.Marshal(res)
	if err != nil || string(out) != `{"resultCode":"ChallengeShopper","action":`+action+`,"merchantReference":"order-1"}` {
		t.Fatalf("marshalled %s %v", out, err)
	}
	redirect, err := json.Marshal(client.Action{Type: client.ActionRedirect, Method: "POST", URL: "https://issuer.example/3ds", Data: map[string]string{"PaReq": "x"}})
	if err != nil || string(redirect) != `{"type":"redirect","url":"https://issuer.example/3ds","method":"POST","data":{"PaReq":"x"}}` {
		t.Fatalf("an action without Raw: %s %v", redirect, err)
	}
	var none client.PaymentResult
	if err := json.Unmarshal([]byte(`{"resultCode":"Authorised","pspReference":"P","action":null}`), &none); err != nil || none.Action != nil {
		t.Fatalf("%+v %v", none, err)
	}
}
