package embedded

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// kv is what a payment's ledger is read from and written to: a bbolt
// transaction (txKV), or the file seen through the payment journal's
// pending writes (overlay), which also collects a journaled write's
// changes. Values a kv returns are valid until its transaction ends; a
// value or key handed to put or del must not change afterwards.
type kv interface {
	// get returns key's value in bucket (nil: none).
	get(bucket string, key []byte) []byte
	put(bucket string, key, value []byte) error
	del(bucket string, key []byte) error
	// last returns the greatest key of bucket that starts with prefix
	// (nil: none).
	last(bucket string, prefix []byte) []byte
	// scan calls fn with bucket's keys that start with prefix, in order,
	// from from on (nil: from the first), until fn returns false.
	scan(bucket string, prefix, from []byte, fn func(k, v []byte) (bool, error)) error
}

// txKV is a kv on a bbolt transaction (buckets are created on first put).
type txKV struct{ tx *bolt.Tx }

func (t txKV) get(bucket string, key []byte) []byte {
	if b := readBucket(t.tx, bucket); b != nil {
		return b.Get(key)
	}
	return nil
}

func (t txKV) put(bucket string, key, value []byte) error {
	b, err := writeBucket(t.tx, bucket)
	if err != nil {
		return err
	}
	return b.Put(key, value)
}

func (t txKV) del(bucket string, key []byte) error {
	if b := readBucket(t.tx, bucket); b != nil {
		return b.Delete(key)
	}
	return nil
}

func (t txKV) last(bucket string, prefix []byte) []byte {
	b := readBucket(t.tx, bucket)
	if b == nil {
		return nil
	}
	c := b.Cursor()
	k := lastBefore(c, prefix)
	if k != nil && hasPrefix(k, prefix) {
		return k
	}
	return nil
}

// lastBefore positions c on the last key below every key that starts with
// prefix or sorts before it (the last key that may start with prefix).
func lastBefore(c *bolt.Cursor, prefix []byte) []byte {
	end := prefixEnd(prefix)
	if end == nil {
		k, _ := c.Last()
		return k
	}
	if k, _ := c.Seek(end); k == nil {
		k, _ = c.Last()
		return k
	}
	k, _ := c.Prev()
	return k
}

func (t txKV) scan(bucket string, prefix, from []byte, fn func(k, v []byte) (bool, error)) error {
	b := readBucket(t.tx, bucket)
	if b == nil {
		return nil
	}
	if string(from) < string(prefix) {
		from = prefix
	}
	c := b.Cursor()
	for k, v := c.Seek(from); k != nil && hasPrefix(k, prefix); k, v = c.Next() {
		if more, err := fn(k, v); err != nil || !more {
			return err
		}
	}
	return nil
}

// prefixEnd is the least key greater than every key starting with prefix
// (nil: there is none).
func prefixEnd(prefix []byte) []byte {
	end := slices.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// pendingValue is a key's value as the journal's pending writes leave it:
// put (value) or deleted, by the write numbered seq.
type pendingValue struct {
	value []byte
	del   bool
	seq   uint64
}

// overlay is a kv on a read-only transaction of the file seen through the
// journal's pending writes newer than what the file holds (seq > after),
// and, for a journaled write (batch set), through that write's own
// changes, collected in ops.
type overlay struct {
	tx      *bolt.Tx
	pending map[string]map[string]pendingValue
	after   uint64
	batch   map[string]map[string]pendingValue
	ops     []op
}

// errReadOnly: a read through the journal tried to write.
var errReadOnly = errors.New("write in a read-only view")

// lookup returns key's value in the overlay, if it has one.
func (o *overlay) lookup(bucket string, key []byte) (pendingValue, bool) {
	if v, ok := o.batch[bucket][string(key)]; ok {
		return v, true
	}
	if v, ok := o.pending[bucket][string(key)]; ok && v.seq > o.after {
		return v, true
	}
	return pendingValue{}, false
}

func (o *overlay) get(bucket string, key []byte) []byte {
	if v, ok := o.lookup(bucket, key); ok {
		if v.del {
			return nil
		}
		return v.value
	}
	return txKV{o.tx}.get(bucket, key)
}

func (o *overlay) put(bucket string, key, value []byte) error {
	return o.change(op{bucket: bucket, key: key, value: value})
}

func (o *overlay) del(bucket string, key []byte) error {
	return o.change(op{bucket: bucket, key: key, del: true})
}

func (o *overlay) change(c op) error {
	if o.batch == nil {
		return errReadOnly
	}
	m := o.batch[c.bucket]
	if m == nil {
		m = map[string]pendingValue{}
		o.batch[c.bucket] = m
	}
	m[string(c.key)] = pendingValue{value: c.value, del: c.del}
	o.ops = append(o.ops, c)
	return nil
}

// overlaid returns the overlay's keys of bucket that start with prefix
// and are from from on, sorted, with their values.
func (o *overlay) overlaid(bucket string, prefix, from []byte) []keyValue {
	var out []keyValue
	for k, v := range o.pending[bucket] {
		if v.seq > o.after && strings.HasPrefix(k, string(prefix)) && k >= string(from) {
			if _, mine := o.batch[bucket][k]; !mine {
				out = append(out, keyValue{k, v})
			}
		}
	}
	for k, v := range o.batch[bucket] {
		if strings.HasPrefix(k, string(prefix)) && k >= string(from) {
			out = append(out, keyValue{k, v})
		}
	}
	slices.SortFunc(out, func(a, b keyValue) int { return strings.Compare(a.k, b.k) })
	return out
}

type keyValue struct {
	k string
	v pendingValue
}

func (o *overlay) last(bucket string, prefix []byte) []byte {
	var mine []byte
	if kvs := o.overlaid(bucket, prefix, nil); len(kvs) > 0 {
		for i := len(kvs) - 1; i >= 0; i-- {
			if !kvs[i].v.del {
				mine = []byte(kvs[i].k)
				break
			}
		}
	}
	var file []byte
	if b := readBucket(o.tx, bucket); b != nil {
		c := b.Cursor()
		for k := lastBefore(c, prefix); k != nil && hasPrefix(k, prefix); k, _ = c.Prev() {
			if v, ok := o.lookup(bucket, k); !ok || !v.del {
				file = k
				break
			}
		}
	}
	if string(file) > string(mine) {
		return file
	}
	return mine
}

func (o *overlay) scan(bucket string, prefix, from []byte, fn func(k, v []byte) (bool, error)) error {
	if string(from) < string(prefix) {
		from = prefix
	}
	mine := o.overlaid(bucket, prefix, from)
	var (
		c      *bolt.Cursor
		fk, fv []byte
	)
	if b := readBucket(o.tx, bucket); b != nil {
		c = b.Cursor()
		fk, fv = c.Seek(from)
	}
	for {
		if fk != nil && !hasPrefix(fk, prefix) {
			fk = nil
		}
		var k, v []byte
		switch {
		case len(mine) > 0 && (fk == nil || mine[0].k <= string(fk)):
			if fk != nil && mine[0].k == string(fk) { // the overlay's value replaces the file's
				fk, fv = c.Next()
			}
			m := mine[0]
			mine = mine[1:]
			if m.v.del {
				continue
			}
			k, v = []byte(m.k), m.v.value
		case fk != nil:
			k, v = fk, fv
			fk, fv = c.Next()
		default:
			return nil
		}
		if more, err := fn(k, v); err != nil || !more {
			return err
		}
	}
}

// kvGetJSON decodes key's value in bucket into v; ok is false when the
// key is absent.
func kvGetJSON(db kv, bucket string, key []byte, v any) (ok bool, err error) {
	raw := db.get(bucket, key)
	if raw == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("decode %q: %w", key, err)
	}
	return true, nil
}

// kvPutJSON puts v as JSON at key in bucket.
func kvPutJSON(db kv, bucket string, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %q: %w", key, err)
	}
	return db.put(bucket, key, raw)
}
