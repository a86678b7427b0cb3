package swarm

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/svc-project/svc/imagestore"
)

// A chunk asked for a namespace's registry pull (a scope) is served from a
// blob this peer holds only when that namespace may read the blob, and
// from a pull under way only when it is that namespace's own: the chunk
// digests a registry lists prove nothing about who may have those bytes.
func TestService_OpenChunk_scope(t *testing.T) {
	store, err := imagestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.Repeat("TEAM-A PRIVATE KEY MATERIAL ", 1<<15)
	d, _, err := store.Put(context.Background(), strings.NewReader(secret), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	readable := map[string]bool{"team-a\x00" + d: true}
	s := New(Config{Name: "n1", Store: store, Readable: func(ns, digest string) bool { return readable[ns+"\x00"+digest] }})

	// a pull of another namespace, under way here, of the same digest
	plan := Plan{Digest: d, Size: int64(len(secret)), Chunks: []Chunk{{Offset: 0, Size: int64(len(secret)), Digest: d}}}
	part, err := store.OpenScopedPartial("team-b", d, plan.Size)
	if err != nil {
		t.Fatal(err)
	}
	defer part.Close()
	a, err := s.start("team-b", plan, part)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRun(Job{Plan: plan, Scope: "team-b", Disk: part, Origin: func(context.Context, Chunk, []byte) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	r.have.Set(0)
	a.run = r
	defer s.end(a, nil)

	for _, tc := range []struct {
		name, scope string
		want        string // "" for ErrNotHeld
	}{
		{"a blob fetch of a recorded image", "", "blob"},
		{"the namespace that has the blob", "team-a", "blob"},
		{"a namespace that has not", "svc-default", ""},
		{"the namespace whose pull is under way", "team-b", "pull"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, done, err := s.OpenChunk(tc.scope, d, 0, plan.Size)
			if tc.want == "" {
				if !errors.Is(err, ErrNotHeld) {
					t.Fatalf("served: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer done()
			b, _ := io.ReadAll(body)
			fromBlob := string(b) == secret // the pull under way wrote nothing yet: zeros
			if (tc.want == "blob") != fromBlob {
				t.Fatalf("served %q, want it from the %s", b, tc.want)
			}
		})
	}
}
