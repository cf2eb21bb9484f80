package dynamo_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// Every item carries its format version: a record in data in its JSON,
// an item kept as attributes in fmt. It reads as written and without a
// version (version 1); at a version this release does not read, the read
// fails with storeerr.ErrUnknownFormat naming the item's key.
func TestItemFormatVersion(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	s := dynamo.New(client, table, clock.NewFake(t0))
	built := func(it dynamo.Item, err error) dynamo.Item {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return it
	}
	held := idempotency.Record{Scope: "m_fmt", Key: "k", Fingerprint: "fp", Status: idempotency.StatusInProgress,
		LeaseToken: "held", LeaseUntil: t0.Add(time.Hour), ExpiresAt: t0.Add(time.Hour)}
	for _, k := range []struct {
		name   string
		item   dynamo.Item
		inData bool // the version in data's JSON, else in fmt
		read   func() error
	}{
		{"payment head", built(dynamo.HeadItem(authorised("PSP_FMT", t0))), true,
			func() error { _, err := s.GetPayment(ctx, "PSP_FMT"); return err }},
		{"merchant", built(dynamo.MerchantItem(tenant.Merchant{ID: "m_fmt", Name: "Fmt", CreatedAt: t0})), true,
			func() error { _, err := s.GetMerchant(ctx, "m_fmt"); return err }},
		{"idempotency record", built(dynamo.IdempotencyItem(held)), false, func() error {
			// A claim over the held key reads the record holding it.
			got, err := s.Claim(ctx, idempotency.Record{Scope: "m_fmt", Key: "k", Fingerprint: "fp", LeaseToken: "other",
				LeaseUntil: t0.Add(time.Minute), ExpiresAt: t0.Add(time.Hour)}, t0)
			if errors.Is(err, storeerr.ErrConflict) && got.LeaseToken == "held" {
				return nil
			}
			return err
		}},
		{"listing shards", dynamo.ShardsItem("m_fmt", dynamo.ListingShards{Deliveries: 2, Events: 2, Own: true}), false,
			func() error { _, err := s.ListingShards(ctx, "m_fmt"); return err }},
	} {
		for _, version := range []string{"1", "absent", "2"} {
			it := maps.Clone(k.item)
			switch {
			case k.inData:
				d := it["data"].(*types.AttributeValueMemberS).Value
				to := `"format":` + version + `,`
				if version == "absent" {
					to = ""
				}
				it["data"] = &types.AttributeValueMemberS{Value: strings.Replace(d, `"format":1,`, to, 1)}
			case version == "absent":
				delete(it, "fmt")
			default:
				it["fmt"] = &types.AttributeValueMemberN{Value: version}
			}
			rawPut(t, client, table, it)
			err := k.read()
			pk, sk := dynamo.Keys(it)
			switch {
			case version == "2" && (!errors.Is(err, storeerr.ErrUnknownFormat) || !strings.Contains(err.Error(), pk+"/"+sk)):
				t.Errorf("%s at version %s: %v, want ErrUnknownFormat naming %s/%s", k.name, version, err, pk, sk)
			case version != "2" && err != nil:
				t.Errorf("%s at version %s: %v", k.name, version, err)
			}
		}
	}
}
