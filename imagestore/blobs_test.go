package imagestore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func stage(t *testing.T, s *Store, data []byte) *Staged {
	t.Helper()
	st, err := s.Stage(context.Background(), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func age(t *testing.T, s *Store, digest string, by time.Duration) {
	t.Helper()
	old := time.Now().Add(-by)
	if err := os.Chtimes(s.Path(digest), old, old); err != nil {
		t.Fatal(err)
	}
}

func TestStore_staged_file_is_its_own_and_leaves_nothing(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir)
	a, b := stage(t, s, []byte("same bytes")), stage(t, s, []byte("same bytes"))
	if a.Path() == b.Path() || a.Digest != b.Digest {
		t.Fatalf("two stagings share %s", a.Path())
	}
	if s.Has(a.Digest) {
		t.Fatal("a staged file is in the store before its commit")
	}
	a.Discard()
	b.Discard()
	if entries(t, filepath.Join(dir, "tmp")) != 0 || entries(t, filepath.Join(dir, "blobs", "sha256")) != 0 {
		t.Fatal("discarded stagings left files")
	}
}

// A failed request's clean-up must not take a blob another request leased
// or a record references (the defect: a refused upload deleted the disk of
// a concurrent valid upload of the same bytes).
func TestStore_RemoveUnused_cases(t *testing.T) {
	data := []byte("a disk")
	cases := []struct {
		name        string
		otherLease  bool
		referenced  bool
		wantRemoved bool
	}{
		{name: "nobody else relies on it", wantRemoved: true},
		{name: "another request holds a lease", otherLease: true},
		{name: "a record references it", referenced: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _ := Open(t.TempDir())
			mine, err := stage(t, s, data).Commit()
			if err != nil || !mine.Created() {
				t.Fatalf("commit: %v, created %v", err, mine.Created())
			}
			if c.otherLease {
				other, err := stage(t, s, data).Commit()
				if err != nil || other.Created() {
					t.Fatalf("second commit of the same bytes: %v, created %v", err, other.Created())
				}
				defer other.Release()
			}
			mine.Release()
			removed, err := s.RemoveUnused(mine.Digest(), func(string) bool { return c.referenced })
			if err != nil || removed != c.wantRemoved || s.Has(mine.Digest()) == c.wantRemoved {
				t.Fatalf("removed %v (err %v), has %v", removed, err, s.Has(mine.Digest()))
			}
		})
	}
}

func TestStore_Collect_cases(t *testing.T) {
	cases := []struct {
		name        string
		age         time.Duration
		leased      bool
		referenced  bool
		wantRemoved bool
	}{
		{name: "old orphan", age: 2 * time.Hour, wantRemoved: true},
		{name: "young orphan: its record may be on its way", age: time.Minute},
		{name: "old but leased", age: 2 * time.Hour, leased: true},
		{name: "old but referenced", age: 2 * time.Hour, referenced: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _ := Open(t.TempDir())
			l, err := stage(t, s, []byte(c.name)).Commit()
			if err != nil {
				t.Fatal(err)
			}
			if !c.leased {
				l.Release()
			}
			age(t, s, l.Digest(), c.age)
			removed, err := s.Collect(func(string) bool { return c.referenced }, time.Hour)
			if err != nil || (len(removed) == 1) != c.wantRemoved || s.Has(l.Digest()) == c.wantRemoved {
				t.Fatalf("removed %v (err %v), has %v", removed, err, s.Has(l.Digest()))
			}
		})
	}
}

// Committing bytes the store already holds starts the blob's grace period
// again, so an old orphan that a new record is about to reference stays.
func TestStore_commit_of_held_bytes_renews_grace(t *testing.T) {
	s, _ := Open(t.TempDir())
	first, _ := stage(t, s, []byte("x")).Commit()
	first.Release()
	age(t, s, first.Digest(), 2*time.Hour)
	again, err := stage(t, s, []byte("x")).Commit()
	if err != nil {
		t.Fatal(err)
	}
	again.Release()
	if removed, _ := s.Collect(func(string) bool { return false }, time.Hour); len(removed) != 0 {
		t.Fatalf("collected %v right after a commit", removed)
	}
}

func TestStore_Lease_of_a_missing_blob(t *testing.T) {
	s, _ := Open(t.TempDir())
	if _, err := s.Lease(digestOf([]byte("absent"))); err == nil {
		t.Fatal("leased a blob the store lacks")
	}
}

func TestStore_StageFile_takes_a_file_in_place(t *testing.T) {
	s, _ := Open(t.TempDir())
	p, err := s.TempPath("export")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("exported disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := s.StageFile(context.Background(), p)
	if err != nil || st.Digest != digestOf([]byte("exported disk")) || st.Size != 13 {
		t.Fatalf("staged %+v %v", st, err)
	}
	l, err := st.Commit()
	if err != nil || !s.Has(l.Digest()) {
		t.Fatalf("commit: %v", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatal("the staged file is still in the staging directory")
	}
	outside := filepath.Join(t.TempDir(), "x")
	_ = os.WriteFile(outside, []byte("x"), 0o600)
	if _, err := s.StageFile(context.Background(), outside); err == nil {
		t.Fatal("staged a file outside the staging directory")
	}
}
