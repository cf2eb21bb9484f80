// Package capacity is the DynamoDB capacity model of the service
// (docs/scale.md): it replays a synthetic trace of one merchant's traffic,
// each request's DynamoDB calls those the store adapter made for a request
// of its kind (Recordings, recorded on moto by cmd/paysvc-bench in the same
// run, keys templated per simulated request), and meters the write and
// read units every partition key takes, second by second, on the table
// and on every global secondary index, with DynamoDB's rounding, using
// each item's real marshalled size. Check fails when a partition key goes
// over DynamoDB's per-partition limits or an item over 400 KB. The cost
// of a payment (cost.go) is derived from the same counts.
package capacity

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/store/dynamo"
)

// DynamoDB's physical limits per partition.
const (
	PartitionWCU = 1000 // write units per second
	PartitionRCU = 3000 // read units per second
)

// Table is the Part.Index of the base table.
const Table = ""

// Part is one partition key of the table or of an index.
type Part struct {
	Index string // "" for the table, else the GSI's name
	PK    string
}

func (p Part) String() string {
	if p.Index == Table {
		return "table " + p.PK
	}
	return p.Index + " " + p.PK
}

// Family is a partition key with its identifiers dropped (its first
// segment), e.g. "table PAYMENT" or "gsi1 MERCHANT".
func (p Part) Family() string {
	head, _, _ := strings.Cut(p.PK, "#")
	if p.Index == Table {
		return "table " + head
	}
	return p.Index + " " + head
}

// Units are capacity units in one second.
type Units struct{ W, R float64 }

// Peak is the busiest second of one partition key.
type Peak struct {
	Part   Part    // the partition of W (and of R, except in a family)
	RPart  Part    // the partition of R
	W, R   float64 // highest write and read units in one second
	WSec   int     // the second of W
	RSec   int
	Family string
}

// Meter counts units per partition key and second. Record operations in
// time order (Second moves forward only).
type Meter struct {
	// Weight multiplies every operation: a trace that samples 1 request
	// in n meters each with weight n.
	Weight float64

	sec     int
	cur     map[Part]Units
	keep    float64          // a partition's second is kept in peaks above this many units
	peaks   map[Part]*Peak   // partitions that came near a limit
	family  map[string]*Peak // the busiest partition second of each family
	famLoad map[string]Units // the busiest second of each family, all its partitions summed
	total   Units            // every unit, all seconds
	byIndex map[string]Units
	maxItem map[string]int // largest item written, per family of its table key
	ops     int
	shapes  []string         // the shape of each call since TakeShapes
	taken   map[string]Units // units per family since TakeUnits, unweighted
}

// TakeShapes returns the shapes of the calls metered since the last take
// (shape.go), in order.
func (m *Meter) TakeShapes() []string {
	out := m.shapes
	m.shapes = nil
	return out
}

// TakeUnits returns the units metered since the last take, by key family
// (Part.Family), unweighted: one request's when taken around it.
func (m *Meter) TakeUnits() map[string]Units {
	out := m.taken
	m.taken = nil
	return out
}

// call counts one metered call of shape kind on parts.
func (m *Meter) call(kind string, parts ...Part) {
	m.ops++
	m.shapes = append(m.shapes, shape(kind, parts...))
}

// written is the item a write names: new, or old for a delete.
func written(old, new dynamo.Item) dynamo.Item {
	if new != nil {
		return new
	}
	return old
}

// tablePart is the table partition of it.
func tablePart(it dynamo.Item) Part {
	pk, _ := dynamo.Keys(it)
	return Part{Table, pk}
}

// NewMeter returns a meter with weight 1.
func NewMeter() *Meter {
	return &Meter{
		Weight: 1, cur: map[Part]Units{}, keep: 50, peaks: map[Part]*Peak{},
		family: map[string]*Peak{}, famLoad: map[string]Units{}, byIndex: map[string]Units{}, maxItem: map[string]int{},
	}
}

// At moves the meter to second s, closing the seconds before it.
func (m *Meter) At(s int) {
	if s < m.sec {
		panic(fmt.Sprintf("capacity: second %d after %d", s, m.sec))
	}
	if s > m.sec {
		m.flush()
		m.sec = s
	}
}

// Close ends the last second; call it before reading results.
func (m *Meter) Close() { m.flush() }

func (m *Meter) flush() {
	sums := map[string]Units{}
	for p, u := range m.cur {
		addUnits(sums, p.Family(), u.W, u.R)
	}
	for fam, sum := range sums {
		l := m.famLoad[fam]
		m.famLoad[fam] = Units{max(l.W, sum.W), max(l.R, sum.R)}
	}
	for p, u := range m.cur {
		peakOf(m.family, p.Family(), p).raise(p, u, m.sec)
		if u.W >= m.keep || u.R >= m.keep {
			peakOf(m.peaks, p, p).raise(p, u, m.sec)
		}
	}
	clear(m.cur)
}

// peakOf is peaks[k], a new peak of partition p when there is none.
func peakOf[K comparable](peaks map[K]*Peak, k K, p Part) *Peak {
	if peaks[k] == nil {
		peaks[k] = &Peak{Part: p, RPart: p, Family: p.Family()}
	}
	return peaks[k]
}

// raise makes partition p's units u in second sec the peak's where they
// are higher.
func (pk *Peak) raise(p Part, u Units, sec int) {
	if u.W > pk.W {
		pk.W, pk.WSec, pk.Part = u.W, sec, p
	}
	if u.R > pk.R {
		pk.R, pk.RSec, pk.RPart = u.R, sec, p
	}
}

func (m *Meter) add(p Part, w, r float64) {
	if m.taken == nil {
		m.taken = map[string]Units{}
	}
	addUnits(m.taken, p.Family(), w, r)
	w, r = w*m.Weight, r*m.Weight
	addUnits(m.cur, p, w, r)
	m.total.W += w
	m.total.R += r
	addUnits(m.byIndex, p.Index, w, r)
}

// addUnits adds w and r to m[k].
func addUnits[K comparable](m map[K]Units, k K, w, r float64) {
	u := m[k]
	m[k] = Units{u.W + w, u.R + r}
}

// writeUnits is the WCU of writing n bytes: 1 per KB, rounded up.
func writeUnits(n int) float64 { return math.Max(1, math.Ceil(float64(n)/1024)) }

// readUnits is the RCU of reading n bytes: 1 per 4 KB rounded up
// (strongly consistent), half that eventually consistent.
func readUnits(n int, consistent bool) float64 {
	u := math.Max(1, math.Ceil(float64(n)/4096))
	if !consistent {
		u /= 2
	}
	return u
}

// Put meters a write that replaces old (nil: none) by new (nil: a delete):
// on the table, the larger of the two sizes; on each index, an update in
// place when the item keeps its index key and changes a projected
// attribute (none when it changes none), else a delete of the old entry
// and an insert of the new one, each entry its projection's size
// (dynamo.IndexEntry).
func (m *Meter) Put(old, new dynamo.Item) {
	m.call("write", tablePart(written(old, new)))
	m.write(old, new, 1)
}

// Write is one item write of a transaction: old (nil: none) replaced by
// new (nil: a delete).
type Write struct{ Old, New dynamo.Item }

// TransactWrite meters one TransactWriteItems of writes: on the table
// each item costs twice its units (DynamoDB prepares and commits every
// item of a transaction: 2 write units per KB); the index updates it
// causes are propagated after the commit and cost what a plain write's do.
func (m *Meter) TransactWrite(writes ...Write) {
	m.call("transact", writeParts(writes)...)
	for _, w := range writes {
		m.write(w.Old, w.New, 2)
	}
}

// writeParts are the table partitions of writes.
func writeParts(writes []Write) []Part {
	parts := make([]Part, 0, len(writes))
	for _, w := range writes {
		parts = append(parts, tablePart(written(w.Old, w.New)))
	}
	return parts
}

// tableParts are the table partitions of items.
func tableParts(items []dynamo.Item) []Part {
	parts := make([]Part, 0, len(items))
	for _, it := range items {
		parts = append(parts, tablePart(it))
	}
	return parts
}

// write meters old replaced by new at factor times the table's units.
func (m *Meter) write(old, new dynamo.Item, factor float64) {
	pk, _ := dynamo.Keys(written(old, new))
	size := max(dynamo.ItemSize(old), dynamo.ItemSize(new))
	m.add(Part{Table, pk}, factor*writeUnits(size), 0)
	if new != nil {
		fam := Part{Table, pk}.Family()
		m.maxItem[fam] = max(m.maxItem[fam], dynamo.ItemSize(new))
	}
	for _, ix := range dynamo.Indexes {
		oe, inOld := dynamo.IndexEntry(old, ix.Name)
		ne, inNew := dynamo.IndexEntry(new, ix.Name)
		opk, osk, _ := dynamo.IndexKey(old, ix.Name)
		npk, nsk, _ := dynamo.IndexKey(new, ix.Name)
		switch {
		case inOld && inNew && opk == npk && osk == nsk:
			if !sameEntry(oe, ne) { // an update that changes no projected attribute writes no entry
				m.add(Part{ix.Name, npk}, writeUnits(dynamo.ItemSize(ne)), 0)
			}
		default:
			if inOld {
				m.add(Part{ix.Name, opk}, writeUnits(dynamo.ItemSize(oe)), 0)
			}
			if inNew {
				m.add(Part{ix.Name, npk}, writeUnits(dynamo.ItemSize(ne)), 0)
			}
		}
	}
}

// sameEntry reports whether two index entries hold the same attributes.
func sameEntry(a, b dynamo.Item) bool {
	return maps.EqualFunc(a, b, func(x, y types.AttributeValue) bool { return reflect.DeepEqual(x, y) })
}

// FailedPut meters a conditional write whose condition failed: it
// consumes the write units of the item it was checked against.
func (m *Meter) FailedPut(existing dynamo.Item) {
	m.call("write", tablePart(existing))
	m.add(tablePart(existing), writeUnits(dynamo.ItemSize(existing)), 0)
}

// FailedTransact meters a TransactWriteItems cancelled by a condition as
// if it had written, an upper bound (DynamoDB does not publish what a
// cancelled one consumes): 2 units per KB of the larger of each item's
// Old (what its condition was checked against) and New (what it would
// have written), on the table only, as nothing reached an index.
func (m *Meter) FailedTransact(writes ...Write) {
	m.call("transact", writeParts(writes)...)
	for _, w := range writes {
		m.add(tablePart(written(w.Old, w.New)), 2*writeUnits(max(dynamo.ItemSize(w.Old), dynamo.ItemSize(w.New))), 0)
	}
}

// Get meters a GetItem of it (strongly consistent, as the adapter reads).
func (m *Meter) Get(it dynamo.Item) { m.read("get", it) }

// BatchGet meters one BatchGetItem of items (strongly consistent): each
// its read units on its partition.
func (m *Meter) BatchGet(items ...dynamo.Item) { m.read("batchget", items...) }

// read meters one call of kind reading items, strongly consistent.
func (m *Meter) read(kind string, items ...dynamo.Item) {
	m.call(kind, tableParts(items)...)
	for _, it := range items {
		m.add(tablePart(it), 0, readUnits(dynamo.ItemSize(it), true))
	}
}

// Query meters one Query of partition pk in index ("" for the table)
// returning items: their sizes summed, then rounded.
func (m *Meter) Query(index, pk string, consistent bool, items ...dynamo.Item) {
	m.call("query", Part{index, pk})
	n := 0
	for _, it := range items {
		n += dynamo.ItemSize(it)
	}
	m.add(Part{index, pk}, 0, readUnits(n, consistent))
}

// Result is what a meter counted.
type Result struct {
	Total   Units
	ByIndex map[string]Units
	// Families holds the busiest second of the busiest partition of each
	// key family; Hot every partition second over the keep threshold.
	Families []Peak
	Hot      []Peak
	// FamilyLoad is each family's busiest second, all its partitions
	// summed (what a write-sharded family spreads over its shards).
	FamilyLoad map[string]Units
	MaxItem    map[string]int // largest item written, per table key family
	Ops        int            // operations metered (unweighted)
}

// Result returns the counts, busiest first.
func (m *Meter) Result() Result {
	r := Result{Total: m.total, ByIndex: maps.Clone(m.byIndex), FamilyLoad: maps.Clone(m.famLoad), MaxItem: m.maxItem, Ops: m.ops}
	for _, f := range m.family {
		r.Families = append(r.Families, *f)
	}
	for _, p := range m.peaks {
		r.Hot = append(r.Hot, *p)
	}
	busiest := func(ps []Peak) {
		sort.Slice(ps, func(i, j int) bool {
			a, b := ps[i], ps[j]
			la, lb := math.Max(a.W/PartitionWCU, a.R/PartitionRCU), math.Max(b.W/PartitionWCU, b.R/PartitionRCU)
			if la != lb {
				return la > lb
			}
			return a.Part.String() < b.Part.String()
		})
	}
	busiest(r.Families)
	busiest(r.Hot)
	return r
}

// Check reports every partition key over a per-partition limit and every
// item family over 400 KB.
func (r Result) Check() error {
	var bad []string
	for _, p := range r.Hot {
		if p.W > PartitionWCU {
			bad = append(bad, fmt.Sprintf("%s: %.0f WCU/s in second %d (limit %d)", p.Part, p.W, p.WSec, PartitionWCU))
		}
		if p.R > PartitionRCU {
			bad = append(bad, fmt.Sprintf("%s: %.0f RCU/s in second %d (limit %d)", p.Part, p.R, p.RSec, PartitionRCU))
		}
	}
	for _, f := range slices.Sorted(maps.Keys(r.MaxItem)) {
		if n := r.MaxItem[f]; n > dynamo.MaxItemBytes {
			bad = append(bad, fmt.Sprintf("%s: item of %d bytes (limit %d)", f, n, dynamo.MaxItemBytes))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("capacity: %d limit(s) exceeded:\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
	return nil
}
