package swarm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fileDisk is a Disk in a temporary file, journaled in memory.
type fileDisk struct {
	f    *os.File
	mu   sync.Mutex
	done map[[2]int64]bool
}

func newDisk(t *testing.T, size int64) *fileDisk {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "disk"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return &fileDisk{f: f, done: map[[2]int64]bool{}}
}

func (d *fileDisk) File() *os.File { return d.f }
func (d *fileDisk) Written(off, size int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.done[[2]int64{off, size}]
}
func (d *fileDisk) Clear(int64, int64) error { return nil }
func (d *fileDisk) Wrote(off, size int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.done[[2]int64{off, size}] = true
	return nil
}

// memNet joins runs in one process: a shared tracker, chunks served
// from each run's disk (or the seed's bytes), bytes counted per server.
type memNet struct {
	self    string
	tracker *Tracker
	seed    []byte // what the seeds serve
	mu      *sync.Mutex
	runs    map[string]*run
	corrupt map[string]bool
	served  map[string]*atomic.Int64
}

func (n memNet) Chunk(ctx context.Context, node, _, _ string, c Chunk, buf []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n.mu.Lock()
	r := n.runs[node]
	n.mu.Unlock()
	switch {
	case r == nil:
		copy(buf, n.seed[c.Offset:c.Offset+c.Size])
	default:
		i, ok := r.job.Plan.index()[c.Offset]
		if !ok || !r.Has(i) {
			return fmt.Errorf("%s has not chunk at %d", node, c.Offset)
		}
		if _, err := r.job.Disk.File().ReadAt(buf, c.Offset); err != nil {
			return err
		}
	}
	if n.corrupt[node] {
		buf[0] ^= 0xff
	}
	n.served[node].Add(c.Size)
	return nil
}

func (n memNet) Announce(_ context.Context, key string, a Announce) (Reply, error) {
	return n.tracker.Announce(key, n.self, a, time.Now())
}

// blobOf is size random bytes and their plan.
func blobOf(t *testing.T, size int64) ([]byte, Plan) {
	t.Helper()
	data := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(data)
	p := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	plan, err := Cut(context.Background(), p, "sha256:"+hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	return data, plan
}

// fleet fetches one blob on n peers at once from one seed and returns
// their disks, their results and the bytes each server sent.
func fleet(t *testing.T, n int, corrupt map[string]bool) ([]byte, []*fileDisk, []Result, map[string]*atomic.Int64) {
	t.Helper()
	data, plan := blobOf(t, 48<<20)
	mu, runs, served := &sync.Mutex{}, map[string]*run{}, map[string]*atomic.Int64{"seed": {}}
	tr := NewTracker()
	disks, results, errs := make([]*fileDisk, n), make([]Result, n), make([]error, n)
	for i := range n {
		served[fmt.Sprintf("p%d", i)] = &atomic.Int64{}
	}
	var wg sync.WaitGroup
	for i := range n {
		name := fmt.Sprintf("p%d", i)
		disks[i] = newDisk(t, plan.Size)
		r, err := newRun(Job{Plan: plan, Disk: disks[i], Seeds: []string{"seed"}, Workers: 4,
			Net: memNet{self: name, tracker: tr, seed: data, mu: mu, runs: runs, corrupt: corrupt, served: served}})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		runs[name] = r
		mu.Unlock()
		wg.Go(func() { results[i], errs[i] = r.fetch(context.Background()) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("peer %d: %v", i, err)
		}
	}
	return data, disks, results, served
}

func TestRun_peers_share_chunks(t *testing.T) {
	data, disks, results, served := fleet(t, 4, nil)
	fromPeers := 0
	for i, d := range disks {
		got, err := os.ReadFile(d.f.Name())
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("peer %d: its copy differs (%v)", i, err)
		}
		fromPeers += results[i].FromPeers
	}
	if sent := served["seed"].Load(); sent > 2*int64(len(data)) {
		t.Fatalf("the seed sent %d bytes: %.2f copies", sent, float64(sent)/float64(len(data)))
	}
	if fromPeers == 0 {
		t.Fatal("no chunk went from peer to peer")
	}
}

func TestRun_bad_peer_dropped(t *testing.T) {
	data, disks, results, _ := fleet(t, 4, map[string]bool{"p0": true})
	dropped := 0
	for i, d := range disks {
		got, err := os.ReadFile(d.f.Name())
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("peer %d: its copy differs (%v)", i, err)
		}
		for _, p := range results[i].Dropped {
			if p != "p0" {
				t.Fatalf("peer %d dropped %s, which served no bad chunk", i, p)
			}
			dropped++
		}
	}
	if dropped == 0 {
		t.Fatal("nobody caught the peer serving bad chunks")
	}
}

func TestRun_resumes_what_the_disk_has(t *testing.T) {
	data, plan := blobOf(t, 8<<20)
	d := newDisk(t, plan.Size)
	for _, c := range plan.Chunks[:3] {
		if _, err := d.f.WriteAt(data[c.Offset:c.Offset+c.Size], c.Offset); err != nil {
			t.Fatal(err)
		}
		_ = d.Wrote(c.Offset, c.Size)
	}
	served := map[string]*atomic.Int64{"seed": {}}
	res, err := Run(context.Background(), Job{Plan: plan, Disk: d, Seeds: []string{"seed"},
		Net: memNet{self: "p", tracker: NewTracker(), seed: data, mu: &sync.Mutex{}, runs: map[string]*run{}, served: served}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed != 3 || res.FromOrigin != len(plan.Chunks)-3 || served["seed"].Load() != plan.Size-3*plan.Chunks[0].Size {
		t.Fatalf("result %+v, seed sent %d", res, served["seed"].Load())
	}
}

// failingNet's tracker never answers and its peers fail: the fetch goes
// on from its Origin alone.
type failingNet struct{}

func (failingNet) Chunk(context.Context, string, string, string, Chunk, []byte) error {
	return errors.New("down")
}
func (failingNet) Announce(context.Context, string, Announce) (Reply, error) {
	return Reply{}, errors.New("no leader")
}

func TestRun_without_a_tracker_reads_the_origin(t *testing.T) {
	data, plan := blobOf(t, 4<<20)
	d := newDisk(t, plan.Size)
	var reads atomic.Int64
	origin := func(_ context.Context, c Chunk, buf []byte) error {
		reads.Add(1)
		copy(buf, data[c.Offset:])
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, Job{Plan: plan, Disk: d, Origin: origin, Net: failingNet{}})
	if err != nil || res.FromOrigin != len(plan.Chunks) || reads.Load() != int64(len(plan.Chunks)) {
		t.Fatalf("%+v %v (%d reads)", res, err, reads.Load())
	}
}

// ghostNet lists a peer that has every chunk but never sends one.
type ghostNet struct {
	memNet
	asked *atomic.Int64
}

func (n ghostNet) Chunk(ctx context.Context, node, scope, digest string, c Chunk, buf []byte) error {
	if node == "ghost" {
		n.asked.Add(1)
		return errors.New("connection refused")
	}
	return n.memNet.Chunk(ctx, node, scope, digest, c, buf)
}

func TestRun_unreachable_peer_shunned(t *testing.T) {
	data, plan := blobOf(t, 16<<20)
	tr := NewTracker()
	all := NewBits(len(plan.Chunks))
	for i := range plan.Chunks {
		all.Set(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { // the ghost keeps saying it has everything
		for ctx.Err() == nil {
			_, _ = tr.Announce(plan.Key(), "ghost", Announce{Chunks: len(plan.Chunks), Have: all}, time.Now())
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	served := map[string]*atomic.Int64{"seed": {}}
	var asked atomic.Int64
	net := ghostNet{memNet: memNet{self: "p", tracker: tr, seed: data, mu: &sync.Mutex{}, runs: map[string]*run{}, served: served}, asked: &asked}
	if _, err := tr.Announce(plan.Key(), "ghost", Announce{Chunks: len(plan.Chunks), Have: all}, time.Now()); err != nil {
		t.Fatal(err)
	}
	res, err := Run(ctx, Job{Plan: plan, Disk: newDisk(t, plan.Size), Seeds: []string{"seed"}, Net: net})
	if err != nil || res.FromOrigin != len(plan.Chunks) {
		t.Fatalf("%+v %v", res, err)
	}
	if n := asked.Load(); n < unreachableAfter || n > unreachableAfter+4 {
		t.Fatalf("the unreachable peer was asked %d times", n)
	}
}
