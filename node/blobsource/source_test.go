package blobsource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/fsmtest"
	"github.com/svc-project/svc/testkit/poll"
)

func newSource(t *testing.T, pull func(context.Context, raftfsm.VM, string) error) (*Source, *fsmtest.Applier, *imagestore.Store) {
	t.Helper()
	a := fsmtest.New()
	a.Must(t, raftfsm.TypeInit, raftfsm.TestInit("c1", time.Now().UTC().Truncate(time.Second)))
	images, err := imagestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Name: "n1", FSM: a.FSM, Images: images, PeerURL: func(string) string { return "" }, Pull: pull, Proposer: a}), a, images
}

func image(t *testing.T, a *fsmtest.Applier, name, digest, holder string) {
	t.Helper()
	a.Must(t, raftfsm.TypeImageCreate, raftfsm.ImageCreate{Image: raftfsm.Image{
		Name: name, Namespace: api.DefaultNamespace, Digest: digest, SizeBytes: 10, Format: "qcow2", State: raftfsm.ImageReady,
	}, Holder: holder, Proof: raftfsm.ProofReceived})
}

func TestSource_EnsureBlob_cases(t *testing.T) {
	errPulled := errors.New("pulled from the registry")
	t.Run("here but no longer recorded: held again", func(t *testing.T) {
		s, a, images := newSource(t, nil)
		d, _, err := images.Put(context.Background(), strings.NewReader("content"), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		image(t, a, "img", d, "n2")
		if err := s.EnsureBlob(context.Background(), raftfsm.VM{ImageDigest: d}, d); err != nil {
			t.Fatal(err)
		}
		if b, _ := a.FSM.Blob(d); !slices.Contains(b.Holders, "n1") {
			t.Fatalf("holders %v", b.Holders)
		}
	})
	t.Run("no peer holds it, no registry", func(t *testing.T) {
		s, a, _ := newSource(t, nil)
		d := "sha256:" + strings.Repeat("cd", 32)
		image(t, a, "img", d, "n1") // only this node, which lacks it
		err := s.EnsureBlob(context.Background(), raftfsm.VM{ImageDigest: d}, d)
		if err == nil || !strings.Contains(err.Error(), "no peer holds it") {
			t.Fatalf("err = %v", err)
		}
	})
	// A digest a registry claims is not a right to the bytes: unless the
	// VM's namespace has an image of that content, the host pulls it,
	// though it (or a peer) holds a blob of that digest.
	t.Run("a registry's claim of another namespace's content is pulled, never taken from here", func(t *testing.T) {
		var pulled string
		s, a, images := newSource(t, func(_ context.Context, _ raftfsm.VM, digest string) error { pulled = digest; return errPulled })
		d, _, err := images.Put(context.Background(), strings.NewReader("team-a's disk"), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		image(t, a, "secret", d, "n1")
		err = s.EnsureBlob(context.Background(), raftfsm.VM{Namespace: "other", ImageDigest: d, ImageSource: "attacker.example/steal:x"}, d)
		if !errors.Is(err, errPulled) || pulled != d {
			t.Fatalf("err = %v, pulled %q", err, pulled)
		}
		pulled = ""
		err = s.EnsureBlob(context.Background(), raftfsm.VM{Namespace: api.DefaultNamespace, ImageDigest: d, ImageSource: "registry.example/app:v1"}, d)
		if err != nil || pulled != "" {
			t.Fatalf("the namespace that has the content: err = %v, pulled %q", err, pulled)
		}
	})
	t.Run("a registry reference no peer can send is pulled", func(t *testing.T) {
		var pulled string
		s, _, _ := newSource(t, func(_ context.Context, _ raftfsm.VM, digest string) error { pulled = digest; return errPulled })
		d := "sha256:" + strings.Repeat("ef", 32)
		err := s.EnsureBlob(context.Background(), raftfsm.VM{ImageDigest: d, ImageSource: "registry.example/app:v1"}, d)
		if !errors.Is(err, errPulled) || pulled != d {
			t.Fatalf("err = %v, pulled %q", err, pulled)
		}
	})
}

func TestSource_HoldBlob(t *testing.T) {
	s, _, images := newSource(t, nil)
	d, _, err := images.Put(context.Background(), strings.NewReader("content"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	release, err := s.HoldBlob(d)
	if err != nil {
		t.Fatal(err)
	}
	if removed, _ := images.Collect(func(string) bool { return false }, 0); len(removed) != 0 {
		t.Fatalf("a held blob was collected: %v", removed)
	}
	release()
	if removed, _ := images.Collect(func(string) bool { return false }, 0); len(removed) != 1 {
		t.Fatalf("a released blob was not collected: %v", removed)
	}
	if _, err := s.HoldBlob("sha256:" + strings.Repeat("00", 32)); err == nil {
		t.Fatal("held a blob that is not here")
	}
}

// A blob fetched from a peer is checked for what the VM uses it as.
func TestBlobCheck_cases(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a disk or an ISO\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, maxNVRAM+1); err != nil {
		t.Fatal(err)
	}
	vm := raftfsm.VM{ImageDigest: "sha256:disk", ISODigest: "sha256:iso", NVRAMDigest: "sha256:nvram", ImageFormat: "qcow2"}
	cases := []struct {
		name, digest, path string
		ok                 bool
	}{
		{"junk as the disk", "sha256:disk", junk, false},
		{"junk as the ISO", "sha256:iso", junk, false},
		{"a small NVRAM", "sha256:nvram", junk, true},
		{"an NVRAM over its bound", "sha256:nvram", big, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := blobCheck(vm, c.digest)(context.Background(), c.path); (err == nil) != c.ok {
				t.Fatalf("err = %v, want ok %v", err, c.ok)
			}
		})
	}
}

// flaky fails its first n proposals as a leader lost mid-commit does (the
// write's fate unknown), then applies.
type flaky struct {
	*fsmtest.Applier
	n, calls int
}

func (f *flaky) Apply(ctx context.Context, t raftfsm.Type, body any) (any, error) {
	f.calls++
	if f.calls <= f.n {
		return nil, raftfsm.NewRuleError(raftfsm.ErrNotLeader, "leadership lost while committing log")
	}
	return f.Applier.Apply(ctx, t, body)
}

// A holder record whose fate is unknown is sent again until it is in; a
// refused one is not.
func TestSource_recordHolder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fail    int
		digest  string
		calls   int
		refused bool
	}{
		{"applied at once", 0, "sha256:" + strings.Repeat("ab", 32), 1, false},
		{"sent again after unknown fates", 2, "sha256:" + strings.Repeat("ab", 32), 3, false},
		{"refused: no such blob", 0, "sha256:" + strings.Repeat("99", 32), 1, true},
		{"unknown every time: bounded", 99, "sha256:" + strings.Repeat("ab", 32), recordAttempts, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, a, _ := newSource(t, nil)
			image(t, a, "img", "sha256:"+strings.Repeat("ab", 32), "n2")
			f := &flaky{Applier: a, n: tc.fail}
			s.cfg.Proposer = f
			err := s.recordHolder(context.Background(), tc.digest)
			if f.calls != tc.calls {
				t.Fatalf("%d proposals, want %d (err %v)", f.calls, tc.calls, err)
			}
			b, _ := a.FSM.Blob(tc.digest)
			held := slices.Contains(b.Holders, "n1")
			switch {
			case tc.refused && !errors.Is(err, raftfsm.ErrNotFound):
				t.Fatalf("a refused record: %v", err)
			case !tc.refused && tc.fail < recordAttempts && (err != nil || !held):
				t.Fatalf("err %v, held %v", err, held)
			case tc.fail >= recordAttempts && !errors.Is(err, raftfsm.ErrNotLeader):
				t.Fatalf("after every attempt failed: %v", err)
			}
		})
	}
}

// Two VMs starting from one image at once on a node: one gets the blob,
// the other waits for it and finds it here (before, the second met the
// first's partial file and failed: "another pull writes this disk").
func TestSource_EnsureBlob_one_getter_at_a_time(t *testing.T) {
	content := "a disk two VMs start from"
	sum := sha256.Sum256([]byte(content))
	d := "sha256:" + hex.EncodeToString(sum[:])
	release := make(chan struct{})
	var mu sync.Mutex
	pulls, running := 0, 0
	var images *imagestore.Store
	var a *fsmtest.Applier
	s, a, images := newSource(t, func(ctx context.Context, vm raftfsm.VM, digest string) error {
		mu.Lock()
		pulls++
		running++
		busy := running > 1
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		if busy {
			return imagestore.ErrPartialBusy
		}
		<-release
		if _, _, err := images.Put(ctx, strings.NewReader(content), digest, nil); err != nil {
			return err
		}
		// as a pull does: the namespace's image has the content now
		_, err := a.Apply(ctx, raftfsm.TypeImageCreate, raftfsm.ImageCreate{Image: raftfsm.Image{
			Name: "app-v1", Namespace: vm.Namespace, Digest: digest, SizeBytes: int64(len(content)), Format: "raw",
		}, Holder: "n1", Proof: raftfsm.ProofReceived})
		return err
	})
	vm := raftfsm.VM{Namespace: api.DefaultNamespace, ImageDigest: d, ImageSource: "registry.example/app:v1"}
	errs := make(chan error, 2)
	go func() { errs <- s.EnsureBlob(context.Background(), vm, d) }()
	poll.For(t, "the first pull", 10*time.Second, poll.True(func() bool { mu.Lock(); defer mu.Unlock(); return pulls == 1 }))
	go func() { errs <- s.EnsureBlob(context.Background(), vm, d) }()
	poll.For(t, "the second caller waiting, or done", 10*time.Second, poll.True(func() bool { return s.waiting(d) == 1 || len(errs) > 0 }))
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("ensure: %v", err)
		}
	}
	if pulls != 1 || !images.Has(d) {
		t.Fatalf("%d pulls, blob here: %v", pulls, images.Has(d))
	}
}
