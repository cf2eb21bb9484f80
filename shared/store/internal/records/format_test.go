package records

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
)

var (
	at      = time.Date(2026, 5, 4, 10, 0, 0, 123000000, time.UTC)
	success = true
	eur     = money.Amount{Value: 600, Currency: "EUR"}
)

// samples are records with every field set (and one with every optional
// field empty), and the JSON the adapters wrote for them when they stored
// the domain structs directly: existing data keeps reading, new writes
// stay readable by the previous version.
var samples = []struct {
	name   string
	domain any
	golden string
}{
	{"payment", payments.Payment{
		PSPReference: "PSP1", MerchantID: "m_a", SiteID: "site_a", Reference: "order-1", Source: payments.SourceAdvanced,
		SessionID: "CS1", Amount: money.Amount{Value: 1000, Currency: "EUR"}, AuthorisedValue: 1000, CapturedValue: 600,
		RefundedValue: 100, State: payments.StatePartiallyCaptured, ResultCode: "Authorised", RefusalReason: "none",
		PaymentMethod: "visa", ShopperReference: "shopper-1", StoredMethodID: "SPM1", Reservations: map[string]int64{"op_x": 600},
		History: []payments.Event{{At: at, Kind: "capture", Origin: "api", PSPReference: "CAP1", Amount: &eur, Success: &success, Detail: "received"},
			{At: at, Kind: "payment", Origin: "api"}},
		Version: 3, CreatedAt: at, UpdatedAt: at,
	},
		`{"pspReference":"PSP1","merchantId":"m_a","siteId":"site_a","reference":"order-1","source":"advanced","sessionId":"CS1","amount":{"value":1000,"currency":"EUR"},"authorisedValue":1000,"capturedValue":600,"refundedValue":100,"state":"PartiallyCaptured","resultCode":"Authorised","refusalReason":"none","paymentMethod":"visa","shopperReference":"shopper-1","storedPaymentMethodId":"SPM1","reservations":{"op_x":600},"history":[{"at":"2026-05-04T10:00:00.123Z","kind":"capture","origin":"api","pspReference":"CAP1","amount":{"value":600,"currency":"EUR"},"success":true,"detail":"received"},{"at":"2026-05-04T10:00:00.123Z","kind":"payment","origin":"api"}],"version":3,"createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z"}`},
	{"payment, optional fields empty", payments.Payment{PSPReference: "PSP2", Version: 1, CreatedAt: at, UpdatedAt: at},
		`{"pspReference":"PSP2","merchantId":"","siteId":"","source":"","amount":{"value":0,"currency":""},"authorisedValue":0,"capturedValue":0,"refundedValue":0,"state":"","history":null,"version":1,"createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z"}`},
	{"session", payments.Session{ID: "CS1", MerchantID: "m_a", SiteID: "site_a", Reference: "ses_1", Amount: eur,
		ShopperReference: "shopper-1", StorePaymentMethod: true, CreatedAt: at, ExpiresAt: at},
		`{"id":"CS1","merchantId":"m_a","siteId":"site_a","reference":"ses_1","amount":{"value":600,"currency":"EUR"},"shopperReference":"shopper-1","storePaymentMethod":true,"createdAt":"2026-05-04T10:00:00.123Z","expiresAt":"2026-05-04T10:00:00.123Z"}`},
	{"idempotency", idempotency.Record{Scope: "m_a", Key: "k", Fingerprint: "fp", Status: idempotency.StatusCompleted, LeaseToken: "t",
		LeaseUntil: at, ExpiresAt: at, Response: &idempotency.Response{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"a":1}`)}},
		`{"scope":"m_a","key":"k","fingerprint":"fp","status":"completed","leaseToken":"t","leaseUntil":"2026-05-04T10:00:00.123Z","expiresAt":"2026-05-04T10:00:00.123Z","response":{"status":200,"header":{"Content-Type":"application/json"},"body":"eyJhIjoxfQ=="}}`},
	{"idempotency in progress", idempotency.Record{Scope: "m_a", Key: "k", Fingerprint: "fp", Status: idempotency.StatusInProgress, LeaseUntil: at, ExpiresAt: at},
		`{"scope":"m_a","key":"k","fingerprint":"fp","status":"in_progress","leaseUntil":"2026-05-04T10:00:00.123Z","expiresAt":"2026-05-04T10:00:00.123Z"}`},
}

// TestStoredFormatUnchanged: each record's stored JSON is the golden
// bytes, and reading them back gives the domain value again.
func TestStoredFormatUnchanged(t *testing.T) {
	for _, tc := range samples {
		t.Run(tc.name, func(t *testing.T) {
			var stored any
			var back func([]byte) (any, error)
			switch d := tc.domain.(type) {
			case payments.Payment:
				stored = FromPayment(d)
				back = func(b []byte) (any, error) { var r Payment; err := json.Unmarshal(b, &r); return r.ToPayment(), err }
			case payments.Session:
				stored = FromSession(d)
				back = func(b []byte) (any, error) { var r Session; err := json.Unmarshal(b, &r); return r.ToSession(), err }
			case idempotency.Record:
				stored = FromIdempotency(d)
				back = func(b []byte) (any, error) {
					var r Idempotency
					err := json.Unmarshal(b, &r)
					return r.ToIdempotency(), err
				}
			}
			got, err := json.Marshal(stored)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.golden {
				t.Fatalf("stored JSON changed:\n got %s\nwant %s", got, tc.golden)
			}
			read, err := back([]byte(tc.golden))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(read, tc.domain) {
				t.Fatalf("read back:\n got %+v\nwant %+v", read, tc.domain)
			}
		})
	}
}

// TestToStoredIsUTC: times are stored in UTC whatever the caller's zone,
// and the caller's value is not modified.
func TestToStoredIsUTC(t *testing.T) {
	zone := time.FixedZone("X", 3600)
	p := payments.Payment{PSPReference: "P", CreatedAt: at.In(zone), UpdatedAt: at.In(zone),
		History: []payments.Event{{At: at.In(zone)}}, Reservations: map[string]int64{"a": 1}}
	r := FromPayment(p)
	if r.CreatedAt.Location() != time.UTC || r.UpdatedAt.Location() != time.UTC || r.History[0].At.Location() != time.UTC {
		t.Fatalf("not UTC: %+v", r)
	}
	r.Reservations["a"] = 2
	if p.History[0].At.Location() != zone || p.Reservations["a"] != 1 {
		t.Fatal("the caller's value was modified")
	}
}
