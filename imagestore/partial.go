package imagestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A pull that fails or whose peer is killed midway keeps what it wrote, so
// that the next pull of the same disk on this peer fetches only the rest.
// The disk being written lives in "partial/<hex>" (hex: the digest the whole
// disk must have) next to a journal, "partial/<hex>.journal", of the byte
// ranges written whole. It is never a blob: only the next pull of that disk
// reads it, and the disk becomes a blob only once it matches its digest.
// Partial disks nobody touched for a while are removed by CollectPartials.

// ErrPartialBusy is returned by OpenPartial when another pull of this peer
// writes that disk.
var ErrPartialBusy = errors.New("another pull writes this disk")

// journalRecord is one range in a journal: offset and size, little endian.
const journalRecord = 16

// Partial is a disk a pull writes, resumable. Its methods may be called by
// several goroutines at once.
type Partial struct {
	s      *Store
	digest string
	path   string
	f      *os.File

	mu      sync.Mutex
	journal *os.File
	done    map[[2]int64]bool // ranges written by earlier attempts
	closed  bool
}

// PartialPath is where the partial disk of digest lives (whether or not it
// is there).
func (s *Store) PartialPath(digest string) string { return s.ScopedPartialPath("", digest) }

// ScopedPartialPath is where the partial disk of digest that scope's pulls
// write lives: "partial/<hex>@<scope>" ("partial/<hex>" for no scope).
func (s *Store) ScopedPartialPath(scope, digest string) string {
	name := strings.TrimPrefix(digest, "sha256:")
	if scope != "" {
		name += "@" + scope
	}
	return filepath.Join(s.dir, "partial", name)
}

// validScope is a scope's form: a namespace's name.
var validScope = regexp.MustCompile(`^[a-z0-9-]{1,63}$`)

// OpenPartial opens the partial disk of digest, size bytes long, creating
// it if there is none (or if what is there is not of that size). It holds
// the disk until Close or Stage; a second pull of the same disk on this
// peer gets ErrPartialBusy.
func (s *Store) OpenPartial(digest string, size int64) (*Partial, error) {
	return s.OpenScopedPartial("", digest, size)
}

// OpenScopedPartial is OpenPartial for the pulls of one scope (a
// namespace): what a pull of one namespace wrote from its registry is
// resumed only by pulls of that namespace, since a digest a registry
// claims proves nothing until the whole disk is hashed.
func (s *Store) OpenScopedPartial(scope, digest string, size int64) (*Partial, error) {
	if !ValidDigest(digest) {
		return nil, fmt.Errorf("%q: %w", digest, ErrBadDigest)
	}
	if scope != "" && !validScope.MatchString(scope) {
		return nil, fmt.Errorf("partial disk: scope %q is not a namespace name", scope)
	}
	path := s.ScopedPartialPath(scope, digest)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("partial disk: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("partial disk: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrPartialBusy
		}
		return nil, fmt.Errorf("partial disk: %w", err)
	}
	p := &Partial{s: s, digest: digest, path: path, f: f, done: map[[2]int64]bool{}}
	if err := p.load(size); err != nil {
		f.Close()
		return nil, err
	}
	return p, nil
}

// load reads the journal of a disk of the right size, or starts both afresh.
func (p *Partial) load(size int64) error {
	jpath := p.path + ".journal"
	fi, err := p.f.Stat()
	if err != nil {
		return fmt.Errorf("partial disk: %w", err)
	}
	body, jerr := os.ReadFile(jpath)
	if fi.Size() != size || jerr != nil {
		// Nothing to resume: a new disk, all holes.
		if err := errors.Join(p.f.Truncate(0), p.f.Truncate(size)); err != nil {
			return fmt.Errorf("partial disk: %w", err)
		}
		body = nil
		if err := os.WriteFile(jpath, nil, 0o600); err != nil {
			return fmt.Errorf("partial disk journal: %w", err)
		}
	}
	for i := 0; i+journalRecord <= len(body); i += journalRecord { // a torn last record is ignored
		off, n := int64(binary.LittleEndian.Uint64(body[i:])), int64(binary.LittleEndian.Uint64(body[i+8:]))
		p.done[[2]int64{off, n}] = true
	}
	j, err := os.OpenFile(jpath, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("partial disk journal: %w", err)
	}
	if len(body)%journalRecord != 0 {
		if err := j.Truncate(int64(len(body) / journalRecord * journalRecord)); err != nil {
			j.Close()
			return fmt.Errorf("partial disk journal: %w", err)
		}
	}
	p.journal = j
	return nil
}

// Resumed is the number of ranges earlier attempts wrote.
func (p *Partial) Resumed() int { return len(p.done) }

// File is the disk's file, of the disk's size.
func (p *Partial) File() *os.File { return p.f }

// Written reports whether an earlier attempt wrote the range whole.
func (p *Partial) Written(off, size int64) bool { return p.done[[2]int64{off, size}] }

// Clear makes a range read as zeros before it is written again: an attempt
// killed while writing it may have left part of it. A new disk is all
// holes already.
func (p *Partial) Clear(off, size int64) error {
	if len(p.done) == 0 {
		return nil
	}
	return clearRange(p.f, off, size)
}

// Wrote journals a range written whole.
func (p *Partial) Wrote(off, size int64) error {
	var rec [journalRecord]byte
	binary.LittleEndian.PutUint64(rec[:], uint64(off))
	binary.LittleEndian.PutUint64(rec[8:], uint64(size))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("partial disk: closed")
	}
	if _, err := p.journal.Write(rec[:]); err != nil {
		return fmt.Errorf("partial disk journal: %w", err)
	}
	return nil
}

// Close keeps the partial disk for the next pull and lets it go.
func (p *Partial) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	_ = p.journal.Close()
	_ = p.f.Close() // the lock goes with it
}

// Stage moves the finished disk into the staging directory and stages it
// (flushed and hashed); the partial disk and its journal are gone after.
func (p *Partial) Stage(ctx context.Context) (*Staged, error) {
	tmp, err := p.s.TempPath("pull")
	if err != nil {
		p.Close()
		return nil, err
	}
	// Renamed while still locked: no other pull opens a half-moved disk.
	err = os.Rename(p.path, tmp)
	_ = os.Remove(p.path + ".journal")
	p.Close()
	if err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("partial disk: %w", err)
	}
	return p.s.StageFile(ctx, tmp)
}

// Remove deletes the partial disk and its journal.
func (p *Partial) Remove() {
	_ = os.Remove(p.path)
	_ = os.Remove(p.path + ".journal")
	p.Close()
}

// CollectPartials removes the partial disks that no pull holds and that
// have not been written for maxAge, and returns their digests.
func (s *Store) CollectPartials(maxAge time.Duration) ([]string, error) {
	es, err := os.ReadDir(filepath.Join(s.dir, "partial"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("collect partial disks: %w", err)
	}
	var removed []string
	for _, e := range es {
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < maxAge {
			continue
		}
		if disk, ok := strings.CutSuffix(e.Name(), ".journal"); ok {
			if _, err := os.Stat(filepath.Join(s.dir, "partial", disk)); errors.Is(err, os.ErrNotExist) {
				_ = os.Remove(filepath.Join(s.dir, "partial", e.Name())) // a journal without its disk
			}
			continue
		}
		hexd, scope, _ := strings.Cut(e.Name(), "@")
		digest := "sha256:" + hexd
		if !ValidDigest(digest) {
			continue
		}
		p, err := s.OpenScopedPartial(scope, digest, fi.Size())
		if err != nil {
			continue // busy, or gone meanwhile
		}
		p.Remove()
		removed = append(removed, digest)
	}
	return removed, nil
}

// writeZeros writes size zero bytes at off.
func writeZeros(f *os.File, off, size int64) error {
	zeros := make([]byte, min(size, 1<<20))
	for size > 0 {
		n := min(size, int64(len(zeros)))
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return fmt.Errorf("clear a range of the disk: %w", err)
		}
		off, size = off+n, size-n
	}
	return nil
}
