package embedded

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// The payment journal makes a group of writes durable with one write and
// one fdatasync to a log file beside the database, where a bbolt commit
// writes the changed pages, flushes them, then writes and flushes its
// meta page. It takes the writes on a request's critical path: a
// payment's (payments.Store.Write: the reservation a capture, refund or
// amount update makes before its upstream call, the record after it), a
// session's, and the idempotency result written beside them, when every
// write of the committer's group is one of those (committer.journal).
//
// A journaled write is one entry: every key it puts or deletes, in any
// bucket. It is checked against the file seen through the writes pending
// in the journal (overlay), and stays in memory (pending) once durable;
// point reads see it through the overlay, scans merge it in. The next
// bbolt commit, whatever it writes, first puts every pending key (fold)
// and, in the same transaction, the journal's marker: which entries the
// file now holds (this process's nonce and the last entry's sequence
// number). Once that commit is durable the journal starts over at offset
// 0. Open folds the entries a crash left that the marker does not cover.
// Only the committer's leader appends, folds and starts over, so a
// journaled write and a bbolt transaction never interleave: a
// transaction sees pending writes in the file it writes.
//
// The file is preallocated (written with zeros once), so an entry
// overwrites allocated blocks and fdatasync flushes no file metadata. An
// entry is a 24-byte header — CRC-32C of the rest, payload length, the
// nonce of the process that wrote it, sequence number — and its payload:
// a key length of 0 (2 bytes), then the write's changes (encodeRecord).
// The release before the ledger wrote one payment record per entry: key
// length (2 bytes, not 0), pspReference, the encoded records.LegacyPayment
// (bucket payments); Open folds those too. Reading starts at offset 0 and
// stops at the first entry that is torn (its CRC), of another process (a
// restart picks a new nonce) or not next in sequence (left from before
// the journal started over).
type journal struct {
	f     *os.File
	size  int64
	nonce uint64
	seq   uint64 // of the last entry written (or tried: see append)
	off   int64  // where the next entry goes
	// foldedSeq is the last entry the file's marker covers (0: none of
	// this process's).
	foldedSeq uint64
	// failed is the first write error; the journal is then left unused
	// and writes commit through bbolt.
	failed error
	closed bool

	// mu guards pending: the leader changes it (holding mu), readers
	// hold mu's read lock from before their transaction begins until
	// they are done with pending (Store.viewJournaled).
	mu      sync.RWMutex
	pending map[string]map[string]pendingValue // bucket → key → its value after the last write of it
}

// journalSize is the preallocated size: room for hundreds of writes
// between two bbolt commits; a write that does not fit commits through
// bbolt, which folds the rest and starts the journal over.
const journalSize = 1 << 20

const journalHeader = 24

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// journalEntry is an entry read back from the journal.
type journalEntry struct {
	nonce, seq uint64
	payload    []byte
}

// op is one change of a journaled write: key's value put in bucket, or
// the key deleted (del).
type op struct {
	bucket     string
	key, value []byte
	del        bool
}

// Kinds of change in a record.
const (
	opPut byte = 1
	opDel byte = 2
)

// openJournal opens (creating and preallocating) the journal at path and
// returns the entries it holds, oldest first, for the caller to fold.
func openJournal(path string) (*journal, []journalEntry, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, err
	}
	j := &journal{f: f, size: journalSize, pending: map[string]map[string]pendingValue{}}
	entries, err := j.prepare(filepath.Dir(path))
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	j.nonce = binary.LittleEndian.Uint64(nonce[:])
	return j, entries, nil
}

// prepare reads the entries and preallocates the file to j.size.
func (j *journal) prepare(dir string) ([]journalEntry, error) {
	st, err := j.f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(io.NewSectionReader(j.f, 0, st.Size()), data); err != nil {
		return nil, err
	}
	entries := readJournal(data)
	if st.Size() >= j.size {
		return entries, nil
	}
	// Zeros up to the full size, then the file's size and its name made
	// durable (once, at creation).
	if _, err := j.f.WriteAt(make([]byte, j.size-st.Size()), st.Size()); err != nil {
		return nil, err
	}
	if err := j.f.Sync(); err != nil {
		return nil, err
	}
	return entries, syncDir(dir)
}

// readJournal returns the entries of data in order (see journal).
func readJournal(data []byte) []journalEntry {
	var (
		out   []journalEntry
		nonce uint64
		seq   uint64
	)
	for off := 0; off+journalHeader <= len(data); {
		h := data[off : off+journalHeader]
		n := int(binary.LittleEndian.Uint32(h[4:]))
		end := off + journalHeader + n
		if n < 2 || end > len(data) || end < off {
			break
		}
		if crc32.Checksum(data[off+4:end], crc32c) != binary.LittleEndian.Uint32(h) {
			break
		}
		en, es := binary.LittleEndian.Uint64(h[8:]), binary.LittleEndian.Uint64(h[16:])
		if off > 0 && (en != nonce || es != seq+1) {
			break
		}
		nonce, seq = en, es
		out = append(out, journalEntry{nonce: en, seq: es, payload: data[off+journalHeader : end]})
		off = end
	}
	return out
}

// encodeRecord is the payload of a journaled write of ops.
func encodeRecord(ops []op) []byte {
	n := 2
	for _, o := range ops {
		n += 2 + len(o.bucket) + 2*binary.MaxVarintLen32 + len(o.key) + len(o.value)
	}
	buf := make([]byte, 2, n) // key length 0: a write's changes
	for _, o := range ops {
		kind := opPut
		if o.del {
			kind = opDel
		}
		buf = append(buf, kind, byte(len(o.bucket)))
		buf = append(buf, o.bucket...)
		buf = binary.AppendUvarint(buf, uint64(len(o.key)))
		buf = append(buf, o.key...)
		if !o.del {
			buf = binary.AppendUvarint(buf, uint64(len(o.value)))
			buf = append(buf, o.value...)
		}
	}
	return buf
}

// legacyRecord is the payload the release before the ledger journaled a
// payment record raw of pspReference key with.
func legacyRecord(key, raw []byte) []byte {
	buf := binary.LittleEndian.AppendUint16(nil, uint16(len(key)))
	return append(append(buf, key...), raw...)
}

// errBadRecord: an entry's payload (its CRC matched) is not a record.
var errBadRecord = errors.New("malformed journal record")

// decodeRecord returns the changes of an entry's payload; legacy: a
// payment record the release before the ledger journaled (one put in
// bucket payments).
func decodeRecord(payload []byte) (ops []op, legacy bool, err error) {
	if len(payload) < 2 {
		return nil, false, errBadRecord
	}
	if kn := int(binary.LittleEndian.Uint16(payload)); kn > 0 {
		if 2+kn > len(payload) {
			return nil, false, errBadRecord
		}
		return []op{{bucket: bktPayments, key: payload[2 : 2+kn], value: payload[2+kn:]}}, true, nil
	}
	rest := payload[2:]
	bytesOf := func(n uint64) []byte {
		if n > uint64(len(rest)) {
			return nil
		}
		b := rest[:n:n]
		rest = rest[n:]
		return b
	}
	uvarint := func() (uint64, bool) {
		n, w := binary.Uvarint(rest)
		if w <= 0 {
			return 0, false
		}
		rest = rest[w:]
		return n, true
	}
	for len(rest) > 0 {
		if len(rest) < 2 || (rest[0] != opPut && rest[0] != opDel) {
			return nil, false, errBadRecord
		}
		o := op{del: rest[0] == opDel}
		bn := uint64(rest[1])
		rest = rest[2:]
		name := bytesOf(bn)
		kn, ok := uvarint()
		if name == nil || !ok {
			return nil, false, errBadRecord
		}
		o.bucket = string(name)
		if o.key = bytesOf(kn); o.key == nil {
			return nil, false, errBadRecord
		}
		if !o.del {
			vn, ok := uvarint()
			if !ok {
				return nil, false, errBadRecord
			}
			if o.value = bytesOf(vn); o.value == nil {
				return nil, false, errBadRecord
			}
		}
		ops = append(ops, o)
	}
	return ops, false, nil
}

// errJournalFull: the entry does not fit after the ones pending.
var errJournalFull = errors.New("journal full")

// usable reports whether appends may be tried (no write has failed).
func (j *journal) usable() bool { return j.failed == nil }

// append makes the write of ops durable and pending. On a write error the
// journal is left unused from then on; the entry may be on disk, so its
// number counts as used and the next fold's marker covers it.
func (j *journal) append(ops []op) error {
	for _, o := range ops {
		if len(o.bucket) > 255 || o.bucket == "" {
			return fmt.Errorf("journal: bucket name %q", o.bucket)
		}
	}
	payload := encodeRecord(ops)
	if int64(journalHeader+len(payload)) > j.size-j.off {
		return errJournalFull
	}
	buf := encodeEntry(j, payload)
	if _, err := j.f.WriteAt(buf, j.off); err != nil {
		j.fail(err)
		return fmt.Errorf("journal write: %w", err)
	}
	if err := fdatasync(j.f); err != nil {
		j.fail(err)
		return fmt.Errorf("journal sync: %w", err)
	}
	j.off += int64(len(buf))
	j.seq++
	j.mu.Lock()
	for _, o := range ops {
		m := j.pending[o.bucket]
		if m == nil {
			m = map[string]pendingValue{}
			j.pending[o.bucket] = m
		}
		m[string(o.key)] = pendingValue{value: o.value, del: o.del, seq: j.seq}
	}
	j.mu.Unlock()
	return nil
}

// fail leaves the journal unused after a write error.
func (j *journal) fail(err error) {
	j.failed = err
	j.seq++
}

// encodeEntry encodes payload as j's next entry.
func encodeEntry(j *journal, payload []byte) []byte {
	buf := make([]byte, journalHeader+len(payload))
	binary.LittleEndian.PutUint32(buf[4:], uint32(len(payload)))
	binary.LittleEndian.PutUint64(buf[8:], j.nonce)
	binary.LittleEndian.PutUint64(buf[16:], j.seq+1)
	copy(buf[journalHeader:], payload)
	binary.LittleEndian.PutUint32(buf, crc32.Checksum(buf[4:], crc32c))
	return buf
}

// bktJournal holds the marker: which journal entries the file holds.
const bktJournal = "payment_journal"

var markerKey = []byte("folded")

// readMarker returns the marker's nonce and sequence number (0, 0: none).
func readMarker(tx *bolt.Tx) (nonce, seq uint64) {
	if b := readBucket(tx, bktJournal); b != nil {
		if v := b.Get(markerKey); len(v) == 16 {
			return binary.LittleEndian.Uint64(v), binary.LittleEndian.Uint64(v[8:])
		}
	}
	return 0, 0
}

// putMarker records in tx that the file holds the entries of nonce up to
// seq.
func putMarker(tx *bolt.Tx, nonce, seq uint64) error {
	b, err := writeBucket(tx, bktJournal)
	if err != nil {
		return err
	}
	v := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, nonce), seq)
	return b.Put(markerKey, v)
}

// unfolded reports whether entries were written (or tried) since the last
// fold.
func (j *journal) unfolded() bool { return j.seq != j.foldedSeq }

// view is the file as tx reads it seen through the pending writes (the
// caller holds mu's read lock, or is the leader).
func (j *journal) view(tx *bolt.Tx) *overlay {
	after := uint64(0)
	if nonce, seq := readMarker(tx); nonce == j.nonce {
		after = seq
	}
	return &overlay{tx: tx, pending: j.pending, after: after}
}

// fold puts the pending writes and the marker into tx (committer.fold).
func (j *journal) fold(tx *bolt.Tx) error {
	if !j.unfolded() {
		return nil
	}
	for name, keys := range j.pending {
		b, err := writeBucket(tx, name)
		if err != nil {
			return err
		}
		for k, v := range keys {
			if v.del {
				err = b.Delete([]byte(k))
			} else {
				err = b.Put([]byte(k), v.value)
			}
			if err != nil {
				return err
			}
		}
	}
	return putMarker(tx, j.nonce, j.seq)
}

// folded forgets the pending writes, which a durable bbolt commit now
// holds, and starts the journal over.
func (j *journal) folded() {
	if !j.unfolded() {
		return
	}
	j.mu.Lock()
	clear(j.pending)
	j.mu.Unlock()
	j.foldedSeq = j.seq
	j.off = 0
}

// clearHead overwrites the first entry's header with zeros and flushes
// it: the journal reads as empty (after Open folded it).
func (j *journal) clearHead() error {
	if _, err := j.f.WriteAt(make([]byte, journalHeader), 0); err != nil {
		return err
	}
	return fdatasync(j.f)
}

func (j *journal) close() error { return j.f.Close() }

// closeFolded runs fold (a bbolt commit) if writes are unfolded, marks
// the journal empty if it was ever written, and closes it. A second call
// does nothing.
func (j *journal) closeFolded(fold func() error) error {
	if j.closed {
		return nil
	}
	var err error
	if j.unfolded() {
		err = fold()
	}
	if err == nil && j.seq > 0 && j.failed == nil {
		err = j.clearHead()
	}
	j.closed = true
	if cerr := j.close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes a new file's name in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
