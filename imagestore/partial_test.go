package imagestore

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	partialA = "sha256:" + "aa00000000000000000000000000000000000000000000000000000000000000"
	partialB = "sha256:" + "bb00000000000000000000000000000000000000000000000000000000000000"
	partialC = "sha256:" + "cc00000000000000000000000000000000000000000000000000000000000000"
)

// A partial disk keeps the ranges journaled for the next open of the same
// size; one pull at a time holds it; a torn journal record is dropped; a
// different size starts afresh.
func TestPartial_journal_lock_and_size(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.OpenPartial(partialA, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenPartial(partialA, 4<<20); !errors.Is(err, ErrPartialBusy) {
		t.Fatalf("a second open of a held partial disk: %v", err)
	}
	if _, err := s.OpenPartial("sha256:nope", 1); !errors.Is(err, ErrBadDigest) {
		t.Fatalf("a bad digest: %v", err)
	}
	if _, err := p.File().WriteAt([]byte("data"), 1<<20); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int64{{0, 1 << 20}, {1 << 20, 1 << 20}} {
		if err := p.Wrote(r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	// A record torn by a crash is not trusted.
	j, err := os.OpenFile(s.PartialPath(partialA)+".journal", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = j.Write([]byte{1, 2, 3})
	j.Close()

	for _, tc := range []struct {
		name    string
		size    int64
		resumed int
	}{
		{"same size", 4 << 20, 2},
		{"another size", 8 << 20, 0},
		{"the new size again", 8 << 20, 0},
	} {
		p, err := s.OpenPartial(partialA, tc.size)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		fi, _ := p.File().Stat()
		if p.Resumed() != tc.resumed || fi.Size() != tc.size || p.Written(0, 1<<20) != (tc.resumed > 0) || p.Written(2<<20, 1<<20) {
			t.Fatalf("%s: %d ranges resumed, %d bytes", tc.name, p.Resumed(), fi.Size())
		}
		if tc.resumed == 0 {
			b := make([]byte, 4)
			if _, err := p.File().ReadAt(b, 1<<20); err != nil || string(b) != "\x00\x00\x00\x00" {
				t.Fatalf("%s: a fresh partial disk holds %q", tc.name, b)
			}
		}
		p.Close()
	}
}

// Clear makes a range of a resumed disk read as zeros.
func TestPartial_Clear(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.OpenPartial(partialA, 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	junk := []byte(strings.Repeat("x", 1<<20))
	_, _ = p.File().WriteAt(junk, 1<<20)
	_ = p.Wrote(0, 1<<20)
	p.Close()
	if p, err = s.OpenPartial(partialA, 2<<20); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Clear(1<<20, 1<<20); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1<<20)
	if _, err := p.File().ReadAt(b, 1<<20); err != nil || slices.ContainsFunc(b, func(c byte) bool { return c != 0 }) {
		t.Fatalf("a cleared range is not zeros: %v", err)
	}
}

// The collector removes partial disks untouched for the age given, and
// journals left without their disk; not a young one, nor one a pull holds.
func TestPartial_CollectPartials_cases(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, d := range []string{partialA, partialB, partialC} {
		p, err := s.OpenPartial(d, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		p.Close()
	}
	held, err := s.OpenPartial(partialB, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, path := range []string{s.PartialPath(partialA), s.PartialPath(partialB)} {
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	orphan := s.PartialPath("sha256:dd00000000000000000000000000000000000000000000000000000000000000") + ".journal"
	_ = os.WriteFile(orphan, nil, 0o600)
	_ = os.Chtimes(orphan, old, old)

	removed, err := s.CollectPartials(time.Hour)
	if err != nil || !slices.Equal(removed, []string{partialA}) {
		t.Fatalf("removed %v, %v", removed, err)
	}
	for _, tc := range []struct {
		path string
		kept bool
	}{
		{s.PartialPath(partialA), false},
		{s.PartialPath(partialA) + ".journal", false},
		{s.PartialPath(partialB), true},
		{s.PartialPath(partialC), true},
		{orphan, false},
	} {
		if _, err := os.Stat(tc.path); (err == nil) != tc.kept {
			t.Errorf("%s: kept %v, want %v", tc.path, err == nil, tc.kept)
		}
	}
}

// A namespace's pulls resume only what that namespace's pulls wrote: the
// same digest in two scopes is two partial disks, each with its own
// journal; a scope is a namespace name; the collector removes old scoped
// disks too.
func TestPartial_scoped(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.OpenScopedPartial("team-a", partialA, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Wrote(0, 1<<20); err != nil {
		t.Fatal(err)
	}
	a.Close()
	for _, tc := range []struct {
		scope   string
		resumed int
	}{{"team-a", 1}, {"svc-default", 0}, {"", 0}} {
		p, err := s.OpenScopedPartial(tc.scope, partialA, 1<<20)
		if err != nil {
			t.Fatalf("scope %q: %v", tc.scope, err)
		}
		if p.Resumed() != tc.resumed {
			t.Errorf("scope %q resumes %d ranges, want %d", tc.scope, p.Resumed(), tc.resumed)
		}
		p.Close()
	}
	for _, bad := range []string{"../x", "Team", "a/b", strings.Repeat("a", 64)} {
		if _, err := s.OpenScopedPartial(bad, partialA, 1<<20); err == nil {
			t.Errorf("scope %q accepted", bad)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(s.ScopedPartialPath("team-a", partialA), old, old); err != nil {
		t.Fatal(err)
	}
	removed, err := s.CollectPartials(time.Hour)
	if err != nil || !slices.Equal(removed, []string{partialA}) {
		t.Fatalf("removed %v, %v", removed, err)
	}
	if _, err := os.Stat(s.ScopedPartialPath("team-a", partialA)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old scoped disk is still there: %v", err)
	}
}
