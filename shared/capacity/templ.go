package capacity

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/yp/paysvc/shared/store/dynamo"
)

// Recordings are the store adapter's DynamoDB calls per request kind, as
// cmd/paysvc-bench records them on moto in the same run (the service's
// real handlers, each call with the items it replaced, wrote and read):
// what the model replays for every request of its trace, its keys
// templated for each simulated request (templ.go), instead of sequences
// written by hand.
type Recordings struct {
	// Requests are each kind's recorded requests (TraceResult's kinds:
	// ReqPayments, "notification CAPTURE", …), their calls in order:
	// only those a request makes of the store in Lambda (the tenant and
	// listing shard count caches' reads left out: the model meters their
	// refreshes).
	Requests map[string][][]Recorded
	// The recorded merchant's subscriptions and listing shard counts: a
	// mix replays them as they are, so it must have the same.
	Subscriptions, DeliveryShards, EventShards int
}

// check reports a mix whose merchant is not the recorded one.
func (rec *Recordings) check(m Mix, deliveryShards, eventShards int) error {
	switch {
	case rec == nil || len(rec.Requests) == 0:
		return fmt.Errorf("capacity: no recordings to replay")
	case rec.Subscriptions != m.Subscriptions:
		return fmt.Errorf("capacity: the mix has %d subscriptions, the recordings %d", m.Subscriptions, rec.Subscriptions)
	case rec.DeliveryShards != deliveryShards || rec.EventShards != eventShards:
		return fmt.Errorf("capacity: the mix's listing shards are %d and %d, the recordings' %d and %d",
			deliveryShards, eventShards, rec.DeliveryShards, rec.EventShards)
	}
	return nil
}

// templ rewrites the keys of one recorded request for simulated request
// i of kind label: every partition key names the trace's merchant, site
// and API key; a payment's keys name payment i (its pspReference, its
// pending record and action alias); other per-request items (events,
// deliveries, sessions, idempotency records) get a name of their own per
// simulated request; write-sharded partitions are re-drawn from those
// names as the adapter draws them (the listings, operations in flight),
// and a rate-limit hit goes to the trace's window (replay.rateHit). A
// family without a rule is an error: a key the adapter starts writing
// cannot pass unmodelled.
type templ struct {
	r     *replay
	label string
	i     int
	names map[string]string // recorded per-request key → its simulated name
}

// key is the simulated partition key of recorded key v: attribute attr
// of an item whose table key was mapped to pk (pk itself when attr is
// "pk"), or the partition of a query (attr "query"), which keeps its
// shard (a page queries every shard, and the recorded merchant has the
// mix's shard counts).
func (t *templ) key(attr, v, pk string) (string, error) {
	fam, rest, _ := strings.Cut(v, "#")
	switch fam {
	case "PAYMENT":
		switch {
		case strings.HasPrefix(rest, "pending_action_"):
			return "PAYMENT#pending_action_" + psp(t.i), nil
		case strings.HasPrefix(rest, "pending_"):
			return "PAYMENT#pending_" + psp(t.i), nil
		}
		return "PAYMENT#" + psp(t.i), nil
	case "IDEM":
		return "IDEM#" + traceMerchant + "#" + idemKey(t.i, t.label), nil
	case "EVENT", "DELIVERY", "SESSION":
		return t.named(v, fam), nil
	case "EVENTLOG":
		_, shard, _ := strings.Cut(rest, "#")
		switch attr {
		case "query":
			return "EVENTLOG#" + traceMerchant + "#" + shard, nil
		case "pk": // an entry of the history: its shard drawn from its own name
			return dynamo.EventLogPartition(traceMerchant, t.named(v+"|"+strconv.Itoa(len(t.names)), "EVENT"), t.r.eventShards), nil
		}
	case "MERCHANT":
		if _, shard, ok := strings.Cut(rest, "#DELIVERIES#"); ok {
			switch attr {
			case "gsi2pk": // a delivery's entry: its shard drawn from the delivery's name
				return dynamo.DeliveryIndexPartition(traceMerchant, pk, t.r.deliveryShards), nil
			case "query":
				return "MERCHANT#" + traceMerchant + "#DELIVERIES#" + shard, nil
			}
			break
		}
		return "MERCHANT#" + traceMerchant, nil
	case "INFLIGHT":
		return dynamo.InFlightPartition(psp(t.i)), nil
	case "DUE": // the expiry index (DUE#EXPIRY#<n>): a payment's head, its shard drawn from its pspReference
		if attr == "query" {
			return v, nil
		}
		return dynamo.ExpiryPartition(psp(t.i)), nil
	case "APIKEY":
		return "APIKEY#" + traceKeyID, nil
	case "SITE":
		return "SITE#" + traceSite, nil
	}
	return "", fmt.Errorf("capacity: no template for the key %q (%s) of %s", v, attr, t.label)
}

// named is recorded key v's simulated name: one per distinct key of the
// request, the same each time the request names it.
func (t *templ) named(v, fam string) string {
	if n, ok := t.names[v]; ok {
		return n
	}
	n := fam + "#" + t.label + "/" + strconv.Itoa(t.i) + "/" + strconv.Itoa(len(t.names))
	t.names[v] = n
	return n
}

// item is recorded item it with its partition keys (table and indexes)
// rewritten; nil stays nil.
func (t *templ) item(it dynamo.Item) (dynamo.Item, error) {
	if it == nil {
		return nil, nil
	}
	out := maps.Clone(it)
	pk, _ := dynamo.Keys(it)
	mpk, err := t.key("pk", pk, "")
	if err != nil {
		return nil, err
	}
	out["pk"] = &types.AttributeValueMemberS{Value: mpk}
	for _, attr := range []string{"gsi1pk", "gsi2pk"} {
		v, ok := it[attr].(*types.AttributeValueMemberS)
		if !ok {
			continue
		}
		mv, err := t.key(attr, v.Value, mpk)
		if err != nil {
			return nil, err
		}
		out[attr] = &types.AttributeValueMemberS{Value: mv}
	}
	return out, nil
}

// rateHit reports a recorded call that is a rate-limit hit.
func rateHit(c Recorded) bool {
	if c.Kind != "write" || len(c.Writes) != 1 {
		return false
	}
	pk, _ := dynamo.Keys(written(c.Writes[0].Old, c.Writes[0].New))
	return strings.HasPrefix(pk, "RATE#")
}

// recorded meters one request of kind label for payment i at second s:
// a recorded request of the kind (the i-th, round robin), templated.
func (r *replay) recorded(label string, s, i int) error {
	reqs := r.rec.Requests[label]
	if len(reqs) == 0 {
		return fmt.Errorf("capacity: no recorded request of %q", label)
	}
	t := &templ{r: r, label: label, i: i, names: map[string]string{}}
	for _, c := range reqs[i%len(reqs)] {
		if rateHit(c) {
			r.rateHit(r.at(s, i))
			continue
		}
		out := Recorded{Kind: c.Kind, Failed: c.Failed, Index: c.Index, Consistent: c.Consistent}
		for _, w := range c.Writes {
			old, err := t.item(w.Old)
			if err != nil {
				return err
			}
			nw, err := t.item(w.New)
			if err != nil {
				return err
			}
			out.Writes = append(out.Writes, Write{Old: old, New: nw})
		}
		for _, it := range c.Reads {
			m, err := t.item(it)
			if err != nil {
				return err
			}
			out.Reads = append(out.Reads, m)
		}
		if c.Kind == "query" {
			var err error
			if out.PK, err = t.key("query", c.PK, ""); err != nil {
				return err
			}
		}
		if err := r.meter.Replay(out); err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
	}
	return nil
}

// largest is the size of the largest payment record item written whose
// sort key starts with prefix ("HEAD", "E#"), in any recorded request.
func (rec *Recordings) largest(prefix string) int {
	n := 0
	for _, reqs := range rec.Requests {
		for _, req := range reqs {
			for _, c := range req {
				for _, w := range c.Writes {
					if w.New == nil {
						continue
					}
					pk, sk := dynamo.Keys(w.New)
					if strings.HasPrefix(pk, "PAYMENT#") && strings.HasPrefix(sk, prefix) {
						n = max(n, dynamo.ItemSize(w.New))
					}
				}
			}
		}
	}
	return n
}
