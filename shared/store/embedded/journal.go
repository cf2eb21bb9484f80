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
)

// The payment journal makes a payment save that commits alone durable with
// one write and one fdatasync to a log file beside the database, where a
// bbolt commit writes the changed pages, flushes them, then writes and
// flushes its meta page. It serves the save a capture (or refund, or
// amount update) makes before its upstream call: alone at low load, and
// on the request's critical path.
//
// A journaled record stays in memory (pending) and reads see it; the
// next bbolt commit, whatever it writes, first puts every pending record
// (fold) and, once durable, the journal starts over at offset 0. Open
// folds a journal a crash left behind. Only the committer's leader
// appends, folds and starts over, so a journaled save and a bbolt
// transaction never interleave: a transaction sees pending records in
// the file it writes.
//
// The file is preallocated (written with zeros once), so an entry
// overwrites allocated blocks and fdatasync flushes no file metadata. An
// entry is a 24-byte header — CRC-32C of the rest, payload length, the
// nonce of the process that wrote it, sequence number — and its payload:
// key length (2 bytes), key, encoded record. Reading starts at offset 0
// and stops at the first entry that is torn (its CRC), of another process
// (a restart picks a new nonce) or not next in sequence (left from before
// the journal started over).
type journal struct {
	f     *os.File
	size  int64
	nonce uint64
	seq   uint64 // of the last entry written
	off   int64  // where the next entry goes
	// failed is the first write error; the journal is then left unused
	// and saves commit through bbolt.
	failed error
	closed bool

	mu      sync.RWMutex
	pending map[string][]byte // key → the record last journaled
}

// journalSize is the preallocated size: room for hundreds of records
// between two bbolt commits; a save that does not fit commits through
// bbolt, which folds the rest and starts the journal over.
const journalSize = 1 << 20

const (
	journalHeader = 24
	maxJournalKey = 1<<16 - 1
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// journalEntry is a record read back from the journal.
type journalEntry struct{ key, raw []byte }

// openJournal opens (creating and preallocating) the journal at path and
// returns the entries it holds, oldest first, for the caller to fold.
func openJournal(path string) (*journal, []journalEntry, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, err
	}
	j := &journal{f: f, size: journalSize, pending: map[string][]byte{}}
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
		payload := data[off+journalHeader : end]
		kn := int(binary.LittleEndian.Uint16(payload))
		if 2+kn > len(payload) {
			break
		}
		out = append(out, journalEntry{key: payload[2 : 2+kn], raw: payload[2+kn:]})
		off = end
	}
	return out
}

// errJournalFull: the entry does not fit after the ones pending.
var errJournalFull = errors.New("journal full")

// usable reports whether appends may be tried (no write has failed).
func (j *journal) usable() bool { return j.failed == nil }

// append makes the record raw of key durable and pending. On a write
// error the journal is left unused from then on.
func (j *journal) append(key, raw []byte) error {
	if len(key) > maxJournalKey {
		return errJournalFull
	}
	n := 2 + len(key) + len(raw)
	if j.off+int64(journalHeader+n) > j.size {
		return errJournalFull
	}
	buf := encodeEntry(j, key, raw)
	if _, err := j.f.WriteAt(buf, j.off); err != nil {
		j.failed = err
		return fmt.Errorf("journal write: %w", err)
	}
	if err := fdatasync(j.f); err != nil {
		j.failed = err
		return fmt.Errorf("journal sync: %w", err)
	}
	j.off += int64(len(buf))
	j.seq++
	j.mu.Lock()
	j.pending[string(key)] = buf[journalHeader+2+len(key):]
	j.mu.Unlock()
	return nil
}

// encodeEntry encodes the record raw of key as j's next entry.
func encodeEntry(j *journal, key, raw []byte) []byte {
	n := 2 + len(key) + len(raw)
	buf := make([]byte, journalHeader+n)
	binary.LittleEndian.PutUint32(buf[4:], uint32(n))
	binary.LittleEndian.PutUint64(buf[8:], j.nonce)
	binary.LittleEndian.PutUint64(buf[16:], j.seq+1)
	binary.LittleEndian.PutUint16(buf[journalHeader:], uint16(len(key)))
	copy(buf[journalHeader+2:], key)
	copy(buf[journalHeader+2+len(key):], raw)
	binary.LittleEndian.PutUint32(buf, crc32.Checksum(buf[4:], crc32c))
	return buf
}

// get returns the pending record of key, if any.
func (j *journal) get(key []byte) ([]byte, bool) {
	j.mu.RLock()
	raw, ok := j.pending[string(key)]
	j.mu.RUnlock()
	return raw, ok
}

// each calls fn for every pending record.
func (j *journal) each(fn func(key, raw []byte) error) error {
	j.mu.RLock()
	defer j.mu.RUnlock()
	for k, raw := range j.pending {
		if err := fn([]byte(k), raw); err != nil {
			return err
		}
	}
	return nil
}

// folded forgets the pending records, which a durable bbolt commit now
// holds, and starts the journal over.
func (j *journal) folded() {
	j.mu.Lock()
	clear(j.pending)
	j.mu.Unlock()
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

// closeFolded runs fold (a bbolt commit) if records are pending, marks
// the journal empty if it was ever written, and closes it. A second call
// does nothing.
func (j *journal) closeFolded(fold func() error) error {
	if j.closed {
		return nil
	}
	j.mu.RLock()
	n := len(j.pending)
	j.mu.RUnlock()
	var err error
	if n > 0 {
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
