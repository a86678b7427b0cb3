package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/testkit/testcluster"
)

// fileDigest is the sha256 of the blob a member holds.
func fileDigest(t *testing.T, m *testcluster.Member, digest string) string {
	t.Helper()
	f, err := os.Open(m.Peer.Images().Path(digest))
	if err != nil {
		t.Fatalf("%s: %v", m.Name, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// watchListed checks, until stop is called, that every node the image's
// cache lists holds the whole blob: nothing partial is ever listed.
func watchListed(t *testing.T, c *testcluster.Cluster, cl *api.Client, image, digest string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	wg.Go(func() {
		for ctx.Err() == nil {
			cache, err := cl.ImageCache(ctx, kit.NS, image)
			if err != nil {
				continue
			}
			for _, n := range cache.Nodes {
				if m := memberNamed(c, n); m != nil && m.Peer != nil && !m.Peer.Images().Has(digest) {
					mu.Lock()
					bad = append(bad, n)
					mu.Unlock()
				}
			}
			time.Sleep(5 * time.Millisecond) // a poll's pace, not a wait for a condition
		}
	})
	return func() {
		cancel()
		wg.Wait()
		if len(bad) > 0 {
			t.Errorf("listed as holding %s before they had it whole: %v", image, bad)
		}
	}
}

// Five peers: one holds a 32 MiB image and four copy it at once, one of
// which serves only corrupted chunks. Every copy has the image's digest,
// the holder sends it less than twice, the copies come partly from one
// another, and no node is listed before its copy is whole.
func TestImageSwarm_four_peers_copy_at_once(t *testing.T) {
	// Production timeouts: 5 peers in one process copying at once, beside
	// the rest of CI, starve the short test timeouts into elections and a
	// node declared NOT READY (which fails its part of the job).
	c := testcluster.New(t, 5, testcluster.Options{ProductionTiming: true, Configure: func(i int, cfg *peer.Config) {
		cfg.CorruptServedChunks = i == 4
	}})
	cl := c.Client(c.Members[0])
	img := kit.Upload(t, cl, "fleet", kit.RandomImage(t, 32<<20))
	holder := holderOf(t, c, cl, "fleet")
	if holder == c.Members[4] {
		t.Fatal("the upload went to the corrupting peer")
	}
	var targets []string
	for _, m := range c.Members {
		if m != holder {
			targets = append(targets, m.Name)
		}
	}
	stop := watchListed(t, c, cl, "fleet", img.Digest)
	accepted, err := cl.CacheImage(kit.Ctx(t), kit.NS, "fleet", api.ImageCacheRequest{Nodes: targets})
	if err != nil {
		t.Fatal(err)
	}
	j := kit.WaitJob(t, c, cl, accepted.JobName)
	stop()
	if j.State != api.JobSucceeded {
		t.Fatalf("job %+v", j)
	}
	var fromPeers, dropped float64
	for _, m := range c.Members {
		if got := fileDigest(t, m, img.Digest); got != img.Digest {
			t.Fatalf("%s holds %s, not %s", m.Name, got, img.Digest)
		}
		fromPeers += kit.Metric(t, m, `svc_swarm_chunks_total{from="peer"}`)
		dropped += kit.Metric(t, m, "svc_swarm_dropped_peers_total")
	}
	sent := kit.Metric(t, holder, "svc_swarm_served_bytes_total")
	size := float64(32 << 20)
	t.Logf("the holder sent %.2f copies; %v chunks went peer to peer; %v peers dropped the corrupting one", sent/size, fromPeers, dropped)
	if sent >= 2*size || fromPeers == 0 {
		t.Fatalf("the holder sent %v bytes (%.2f copies), %v chunks came from peers", sent, sent/size, fromPeers)
	}
}

// A holder that serves corrupted chunks is caught: the peer fetching from
// it and from a sound holder drops it and gets the image whole.
func TestImageSwarm_bad_chunks_routed_around(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{Configure: func(i int, cfg *peer.Config) {
		cfg.CorruptServedChunks = i == 2
	}})
	cl := c.Client(c.Members[0])
	img := kit.Upload(t, cl, "routed", kit.RandomImage(t, 32<<20))
	if holderOf(t, c, cl, "routed") != c.Members[0] {
		t.Fatal("the upload went elsewhere")
	}
	bad, target := c.Members[2], c.Members[1]
	for _, m := range []*testcluster.Member{bad, target} {
		accepted, err := cl.CacheImage(kit.Ctx(t), kit.NS, "routed", api.ImageCacheRequest{Nodes: []string{m.Name}})
		if err != nil {
			t.Fatal(err)
		}
		if j := kit.WaitJob(t, c, cl, accepted.JobName); j.State != api.JobSucceeded {
			t.Fatalf("copy to %s: %+v", m.Name, j)
		}
	}
	if got := fileDigest(t, target, img.Digest); got != img.Digest {
		t.Fatalf("%s holds %s", target.Name, got)
	}
	if d := kit.Metric(t, target, "svc_swarm_dropped_peers_total"); d != 1 {
		t.Fatalf("%s dropped %v peers, want the corrupting one", target.Name, d)
	}
}

// A peer killed while it copies an image goes on where it stopped when
// it is back: the chunks it had are not fetched again.
func TestImageSwarm_copy_resumes_after_a_crash(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	cl := c.Client(c.WaitLeader())
	img := kit.Upload(t, cl, "resumed", kit.RandomImage(t, 256<<20))
	holder := holderOf(t, c, cl, "resumed")
	var target *testcluster.Member
	for _, m := range c.Members {
		if m != holder && m != c.Leader() {
			target = m
		}
	}
	accepted, err := cl.CacheImage(kit.Ctx(t), kit.NS, "resumed", api.ImageCacheRequest{Nodes: []string{target.Name}})
	if err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the copy under way", time.Minute, func() error {
		if target.Peer.Blobs().BlobReceived(img.Digest) == 0 {
			return fmt.Errorf("nothing received yet")
		}
		return nil
	})
	c.Crash(target)
	if j := kit.WaitJob(t, c, cl, accepted.JobName); j.State != api.JobFailed {
		t.Fatalf("job %+v", j)
	}
	c.Restart(target)
	c.WaitCaughtUp(target)
	c.WaitFor(target.Name+" READY", 30*time.Second, func() error {
		if p := testcluster.NodePhase(c.Leader(), target.Name); p != api.PhaseReady {
			return fmt.Errorf("%s", p)
		}
		return nil
	})
	accepted, err = cl.CacheImage(kit.Ctx(t), kit.NS, "resumed", api.ImageCacheRequest{Nodes: []string{target.Name}})
	if err != nil {
		t.Fatal(err)
	}
	if j := kit.WaitJob(t, c, cl, accepted.JobName); j.State != api.JobSucceeded {
		t.Fatalf("job after the restart %+v", j)
	}
	resumed, fetched := kit.Metric(t, target, `svc_swarm_chunks_total{from="resumed"}`), kit.Metric(t, target, `svc_swarm_chunks_total{from="origin"}`)
	if resumed == 0 || fetched == 0 || resumed+fetched != 256/4 {
		t.Fatalf("after the restart: %v chunks resumed, %v fetched, of %d", resumed, fetched, 256/4)
	}
	if got := fileDigest(t, target, img.Digest); got != img.Digest {
		t.Fatalf("%s holds %s", target.Name, got)
	}
	if cache, err := cl.ImageCache(kit.Ctx(t), kit.NS, "resumed"); err != nil || !slices.Contains(cache.Nodes, target.Name) {
		t.Fatalf("cache %+v %v", cache, err)
	}
}
