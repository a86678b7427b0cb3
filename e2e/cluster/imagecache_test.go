package cluster

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/testcluster"
)

// An image held by one peer is copied by tag to the two others: the job
// counts the bytes and succeeds, both list it, a VM deployed there copies
// nothing more, and freeing it is refused while a VM uses it (and for the
// only copy), then frees the node's file.
func TestImageCache_by_tag(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	cl := c.Client(c.WaitLeader())
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	holder := holderOf(t, c, cl, "tiny")
	var others []*testcluster.Member
	for _, m := range c.Members {
		if m != holder {
			others = append(others, m)
			if _, err := cl.TagNode(kit.Ctx(t), kit.NS, m.Name, "ci"); err != nil {
				t.Fatal(err)
			}
		}
	}
	accepted, err := cl.CacheImage(kit.Ctx(t), kit.NS, "tiny", api.ImageCacheRequest{Tags: []string{"ci"}})
	if err != nil || !strings.HasSuffix(accepted.StatusURL, "/jobs/"+accepted.JobName) {
		t.Fatalf("cache %+v %v", accepted, err)
	}
	j := kit.WaitJob(t, c, cl, accepted.JobName)
	if j.State != api.JobSucceeded || j.Type != "cache" || j.BytesTotal == 0 || j.BytesDone != j.BytesTotal || len(j.Targets) != 2 {
		t.Fatalf("job %+v", j)
	}
	cache, err := cl.ImageCache(kit.Ctx(t), kit.NS, "tiny")
	if err != nil || len(cache.Nodes) != 3 || len(cache.Copies) != 0 {
		t.Fatalf("cache %+v %v", cache, err)
	}
	b := others[0]
	fetched := kit.Metric(t, b, "svc_image_fetched_bytes_total")
	if fetched < float64(j.BytesTotal/2) {
		t.Fatalf("%s fetched %v bytes for its copy", b.Name, fetched)
	}
	vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Node: b.Name, CPU: kit.Intp(1)})
	if err != nil {
		t.Fatal(err)
	}
	if after := kit.Metric(t, b, "svc_image_fetched_bytes_total"); after != fetched {
		t.Fatalf("the deploy on a node holding the image fetched %v bytes more", after-fetched)
	}
	if _, err := cl.UncacheImage(kit.Ctx(t), kit.NS, "tiny", b.Name); api.CodeOf(err) != http.StatusConflict || !strings.Contains(err.Error(), vm.Name) {
		t.Fatalf("freeing an image a VM uses: %v", err)
	}
	if err := cl.DeleteVM(kit.Ctx(t), kit.NS, vm.Name); err != nil {
		t.Fatal(err)
	}
	cache, err = cl.UncacheImage(kit.Ctx(t), kit.NS, "tiny", b.Name)
	if err != nil || slices.Contains(cache.Nodes, b.Name) || len(cache.Nodes) != 2 {
		t.Fatalf("freed: %+v %v", cache, err)
	}
	digest := cache.Digest
	c.WaitFor("the file freed on "+b.Name, 15*time.Second, func() error {
		if b.Peer.Images().Has(digest) {
			return fmt.Errorf("still there")
		}
		return nil
	})
	if n := kit.NodeByName(t, cl, b.Name); slices.Contains(n.CachedImages, "tiny") {
		t.Fatalf("node record still lists the image: %+v", n.CachedImages)
	}
	// the last two copies: one may go, the last may not
	if _, err := cl.UncacheImage(kit.Ctx(t), kit.NS, "tiny", others[1].Name); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.UncacheImage(kit.Ctx(t), kit.NS, "tiny", holder.Name); api.CodeOf(err) != http.StatusConflict {
		t.Fatalf("freeing the only copy: %v", err)
	}
}

func TestImageCache_bad_input(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	cl := c.Client(c.WaitLeader())
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	other := c.Members[1].Name
	for _, tc := range []struct {
		name  string
		image string
		req   api.ImageCacheRequest
		code  int
	}{
		{"unknown node", "tiny", api.ImageCacheRequest{Nodes: []string{"nope"}}, http.StatusNotFound},
		{"unknown tag", "tiny", api.ImageCacheRequest{Tags: []string{"nope"}}, http.StatusBadRequest},
		{"no selection", "tiny", api.ImageCacheRequest{}, http.StatusBadRequest},
		{"an empty selection", "tiny", api.ImageCacheRequest{Nodes: []string{}}, http.StatusBadRequest},
		{"two selections", "tiny", api.ImageCacheRequest{Nodes: []string{other}, All: true}, http.StatusBadRequest},
		{"too many nodes", "tiny", api.ImageCacheRequest{Nodes: make([]string, api.MaxCacheNodes+1)}, http.StatusBadRequest},
		{"unknown image", "nope", api.ImageCacheRequest{All: true}, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := cl.CacheImage(kit.Ctx(t), kit.NS, tc.image, tc.req); api.CodeOf(err) != tc.code {
				t.Fatalf("got %v, want %d", err, tc.code)
			}
		})
	}
	if err := cl.Do(kit.Ctx(t), http.MethodDelete, "/api/v1/namespaces/"+kit.NS+"/images/tiny/cache", nil, nil); api.CodeOf(err) != http.StatusBadRequest {
		t.Fatalf("free without a node: %v", err)
	}
	if _, err := cl.UncacheImage(kit.Ctx(t), kit.NS, "tiny", "nope"); api.CodeOf(err) != http.StatusNotFound {
		t.Fatalf("free on an unknown node: %v", err)
	}
	if jobs, err := cl.ListJobs(kit.Ctx(t), kit.NS); err != nil || len(jobs) != 0 {
		t.Fatalf("refused requests left jobs: %+v %v", jobs, err)
	}
}

// A node killed while it copies an image lists nothing of it, and the job
// fails saying which node.
func TestImageCache_node_killed_mid_copy(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	cl := c.Client(c.WaitLeader())
	big := kit.RandomImage(t, 256<<20)
	img := kit.Upload(t, cl, "big", big)
	holder := holderOf(t, c, cl, "big")
	var target *testcluster.Member
	for _, m := range c.Members {
		if m != holder && m != c.Leader() {
			target = m
		}
	}
	accepted, err := cl.CacheImage(kit.Ctx(t), kit.NS, "big", api.ImageCacheRequest{Nodes: []string{target.Name}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for target.Peer.Blobs().BlobReceived(img.Digest) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the copy never began")
		}
		time.Sleep(time.Millisecond)
	}
	c.Crash(target)
	j := kit.WaitJob(t, c, cl, accepted.JobName)
	if j.State != api.JobFailed || !strings.Contains(j.Message, target.Name) {
		t.Fatalf("job %+v", j)
	}
	cache, err := cl.ImageCache(kit.Ctx(t), kit.NS, "big")
	if err != nil || slices.Contains(cache.Nodes, target.Name) || len(cache.Copies) != 0 {
		t.Fatalf("cache after the crash: %+v %v", cache, err)
	}
	if n := kit.NodeByName(t, cl, target.Name); slices.Contains(n.CachedImages, "big") {
		t.Fatalf("the killed node lists the image: %+v", n)
	}
}
