package cluster

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/imagestore/diskcheck"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/disktest"
	"github.com/svc-project/svc/testkit/testcluster"
)

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// blobs counts the blob files and staging files under a member's store.
func blobs(t *testing.T, m *testcluster.Member) (int, int) {
	t.Helper()
	b, _ := os.ReadDir(filepath.Join(m.DataDir, "images", "blobs", "sha256"))
	tmp, _ := os.ReadDir(filepath.Join(m.DataDir, "images", "tmp"))
	return len(b), len(tmp)
}

// Generate, copy, describe and delete; bad input is a 400 and leaves nothing.
func TestImage_generate_copy_describe_delete(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	leader := c.WaitLeader()
	f := c.Followers()[0]
	cl := c.Client(f)
	gen, err := cl.GenerateImage(kit.Ctx(t), kit.NS, api.GenerateImageRequest{Name: "blank", Size: "10G", Description: "for an install"})
	if err != nil || gen.Size != "10G" || gen.SourceType != "generated" || gen.State != api.ImageReady || gen.Description != "for an install" {
		t.Fatalf("generate: %+v %v", gen, err)
	}
	if nodes, _ := cl.ListNodes(kit.Ctx(t), kit.NS, true); !cached(nodes, f.Name, "blank") || cached(nodes, leader.Name, "blank") {
		t.Fatalf("cachedImages %+v", nodes)
	}
	nBlobs, _ := blobs(t, f)
	for _, c := range []struct {
		name string
		req  api.GenerateImageRequest
	}{
		{"negative size", api.GenerateImageRequest{Name: "x", Size: "-1G"}},
		{"unknown unit", api.GenerateImageRequest{Name: "x", Size: "10Q"}},
		{"too small", api.GenerateImageRequest{Name: "x", Size: "100"}},
		{"an exponent", api.GenerateImageRequest{Name: "x", Size: "1e3G"}},
		{"a sign", api.GenerateImageRequest{Name: "x", Size: "+10G"}},
		{"a space", api.GenerateImageRequest{Name: "x", Size: " 10G"}},
		{"name with a slash", api.GenerateImageRequest{Name: "a/b", Size: "1G"}},
	} {
		if _, err := cl.GenerateImage(kit.Ctx(t), kit.NS, c.req); api.CodeOf(err) != http.StatusBadRequest {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	if _, err := cl.GenerateImage(kit.Ctx(t), kit.NS, api.GenerateImageRequest{Name: "blank", Size: "1G"}); api.CodeOf(err) != http.StatusConflict {
		t.Fatalf("a taken name: %v", err)
	}
	if n, tmp := blobs(t, f); n != nBlobs || tmp != 0 {
		t.Fatalf("refusals left files: %d blobs (%d before), %d staging", n, nBlobs, tmp)
	}

	cp, err := cl.CopyImage(kit.Ctx(t), kit.NS, "blank", api.CopyRequest{NewName: "blank-copy"})
	if err != nil || cp.Digest != gen.Digest || cp.Description != gen.Description || cp.SourceType != "local" || cp.Source != "blank" {
		t.Fatalf("copy: %+v %v", cp, err)
	}
	if _, err := cl.CopyImage(kit.Ctx(t), kit.NS, "blank", api.CopyRequest{NewName: "bad/name"}); api.CodeOf(err) != http.StatusBadRequest {
		t.Fatalf("copy to a bad name: %v", err)
	}
	if d, err := cl.DescribeImage(kit.Ctx(t), kit.NS, "blank-copy", "mine"); err != nil || d.Description != "mine" {
		t.Fatalf("describe: %+v %v", d, err)
	}
	if _, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "uses-it", Image: "blank-copy"}); err != nil {
		t.Fatal(err)
	}
	err = cl.DeleteImage(kit.Ctx(t), kit.NS, "blank-copy")
	if api.CodeOf(err) != http.StatusConflict || !strings.Contains(err.Error(), "vmconfig uses-it") {
		t.Fatalf("delete while a config uses it: %v", err)
	}
	if err := cl.DeleteVMConfig(kit.Ctx(t), kit.NS, "uses-it"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"blank-copy", "blank"} {
		if err := cl.DeleteImage(kit.Ctx(t), kit.NS, name); err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
	}
	if _, err := cl.GetImage(kit.Ctx(t), kit.NS, "blank"); api.CodeOf(err) != http.StatusNotFound {
		t.Fatalf("after delete: %v", err)
	}
	if leader.Peer.FSM().BlobInUse(gen.Digest) {
		t.Fatal("the deleted images' content is still in use")
	}
}

func cached(nodes []api.Node, node, image string) bool {
	for _, n := range nodes {
		if n.Name == node {
			for _, i := range n.CachedImages {
				if i == image {
					return true
				}
			}
		}
	}
	return false
}

// A download is byte-identical to the upload, resumes with a Range, and
// works through a peer that does not hold the blob.
func TestImage_download(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	c.WaitLeader()
	holder, other := c.Members[0], c.Members[1]
	path := kit.TinyImage(t)
	want, _ := os.ReadFile(path)
	kit.Upload(t, c.Client(holder), "tiny", path)
	c.WaitFor("the image known to the other peer", 10*time.Second, func() error {
		_, err := c.Client(other).GetImage(kit.Ctx(t), kit.NS, "tiny")
		return err
	})
	for _, m := range []*testcluster.Member{holder, other} {
		body, n, etag, err := c.Client(m).DownloadImage(kit.Ctx(t), kit.NS, "tiny", 0)
		if err != nil {
			t.Fatalf("through %s: %v", m.Name, err)
		}
		got, _ := io.ReadAll(body)
		body.Close()
		if !bytes.Equal(got, want) || n != int64(len(want)) || etag != sha(want) {
			t.Fatalf("through %s: %d bytes (length %d), etag %s", m.Name, len(got), n, etag)
		}
		if m == other && other.Peer.Images().Has(etag) {
			t.Fatal("the other peer fetched the blob instead of streaming it")
		}
		// Resume from the middle.
		half := int64(len(want) / 2)
		body, n, _, err = c.Client(m).DownloadImage(kit.Ctx(t), kit.NS, "tiny", half)
		if err != nil {
			t.Fatalf("resume through %s: %v", m.Name, err)
		}
		rest, _ := io.ReadAll(body)
		body.Close()
		if !bytes.Equal(rest, want[half:]) || n != int64(len(want))-half {
			t.Fatalf("resume through %s: %d bytes", m.Name, len(rest))
		}
	}
	// The file name goes with it.
	req, _ := http.NewRequest(http.MethodGet, "http://"+other.Peer.APIAddr()+"/api/v1/namespaces/"+kit.NS+"/images/tiny/download", nil)
	req.Header.Set("Authorization", "Bearer "+c.Client(other).Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cd := resp.Header.Get("Content-Disposition"); cd != `attachment; filename=tiny.qcow2` {
		t.Fatalf("Content-Disposition %q", cd)
	}
}

// isoFile builds an ISO 9660 image with genisoimage.
func isoFile(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("genisoimage"); err != nil {
		t.Skip("genisoimage missing: run scripts/install-deps.sh")
	}
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "setup.txt"), []byte("an installer\n"), 0o600)
	p := filepath.Join(t.TempDir(), "installer.iso")
	if out, err := exec.Command("genisoimage", "-quiet", "-V", "SETUP", "-o", p, dir).CombinedOutput(); err != nil {
		t.Fatalf("genisoimage: %v %s", err, out)
	}
	return p
}

// ISOs: upload (checked), list, copy, describe, attach to a deploy (fetched
// to the VM's host), delete refused while a VM uses it; a body that is not an
// ISO is a 400 and leaves nothing.
func TestISO_upload_attach_delete(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	leader := c.WaitLeader()
	f := c.Followers()[0]
	cl := c.Client(leader)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	p := isoFile(t)
	fh, _ := os.Open(p)
	st, _ := fh.Stat()
	iso, err := cl.UploadISO(kit.Ctx(t), kit.NS, "installer.iso", fh, st.Size())
	fh.Close()
	if err != nil || iso.SourceType != "userUpload" || iso.State != api.ImageReady {
		t.Fatalf("upload: %+v %v", iso, err)
	}
	nBlobs, _ := blobs(t, leader)
	if _, err := cl.UploadISO(kit.Ctx(t), kit.NS, "text.iso", strings.NewReader(strings.Repeat("x", 40000)), 40000); api.CodeOf(err) != http.StatusBadRequest {
		t.Fatalf("a text file as an ISO: %v", err)
	}
	if n, tmp := blobs(t, leader); n != nBlobs || tmp != 0 {
		t.Fatalf("the refused ISO left files: %d blobs (%d before), %d staging", n, nBlobs, tmp)
	}
	if cp, err := cl.CopyISO(kit.Ctx(t), kit.NS, "installer.iso", api.CopyRequest{NewName: "again.iso"}); err != nil || cp.Digest != iso.Digest {
		t.Fatalf("copy: %+v %v", cp, err)
	}
	if d, err := cl.DescribeISO(kit.Ctx(t), kit.NS, "again.iso", "the same"); err != nil || d.Description != "the same" {
		t.Fatalf("describe: %+v %v", d, err)
	}
	if list, err := cl.ListISOs(kit.Ctx(t), kit.NS); err != nil || len(list) != 2 {
		t.Fatalf("list: %+v %v", list, err)
	}
	vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", ISO: "installer.iso", Name: "installing", Node: f.Name, CPU: kit.Intp(1), Memory: kit.Floatp(0.25)})
	if err != nil || vm.ISO != "installer.iso" {
		t.Fatalf("deploy with an ISO: %+v %v", vm, err)
	}
	spec, _ := f.Fake.Spec(hypervisor.DomainName(f.Name, kit.NS, "installing"))
	if spec.ISO != f.Peer.Images().Path(iso.Digest) || !f.Peer.Images().Has(iso.Digest) {
		t.Fatalf("the ISO was not fetched to the host and attached: %q", spec.ISO)
	}
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", ISO: "nope.iso"}); api.CodeOf(err) != http.StatusNotFound {
		t.Fatalf("deploy with an unknown ISO: %v", err)
	}
	if err := cl.DeleteISO(kit.Ctx(t), kit.NS, "installer.iso"); api.CodeOf(err) != http.StatusConflict {
		t.Fatalf("delete while a VM uses it: %v", err)
	}
	if err := cl.DeleteVM(kit.Ctx(t), kit.NS, "installing"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the ISO free", 10*time.Second, func() error { return cl.DeleteISO(kit.Ctx(t), kit.NS, "installer.iso") })
	if _, err := cl.GetISO(kit.Ctx(t), kit.NS, "installer.iso"); api.CodeOf(err) != http.StatusNotFound {
		t.Fatalf("after delete: %v", err)
	}
	if err := cl.DeleteISO(kit.Ctx(t), kit.NS, "again.iso"); err != nil {
		t.Fatal(err)
	}
	if leader.Peer.FSM().BlobInUse(iso.Digest) {
		t.Fatal("the deleted ISOs' content is still in use")
	}
}

// Images and ISOs of a namespace share one set of names: no upload, copy,
// save or pull gives an image an ISO's name, or the other way round.
func TestImage_and_ISO_names_are_one_set(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	c.WaitLeader()
	cl := c.Client(c.Members[0])
	f, err := os.Open(isoFile(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	if _, err := cl.UploadISO(kit.Ctx(t), kit.NS, "shared", f, fi.Size()); err != nil {
		t.Fatal(err)
	}
	img := kit.Upload(t, cl, "disk", kit.TinyImage(t))
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: img.Name, Name: "saver", CPU: kit.Intp(1)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"save a VM onto an ISO's name", func() error {
			_, err := cl.SaveVM(kit.Ctx(t), kit.NS, "saver", api.SaveRequest{ImageName: "shared"})
			return err
		}},
		{"copy an image onto an ISO's name", func() error {
			_, err := cl.CopyImage(kit.Ctx(t), kit.NS, "disk", api.CopyRequest{NewName: "shared"})
			return err
		}},
		{"copy an ISO onto an image's name", func() error {
			_, err := cl.CopyISO(kit.Ctx(t), kit.NS, "shared", api.CopyRequest{NewName: "disk"})
			return err
		}},
		{"upload an image under an ISO's name", func() error {
			b := disktest.Read(t, kit.TinyImage(t))
			_, err := cl.UploadImage(kit.Ctx(t), kit.NS, "shared", bytes.NewReader(b), int64(len(b)))
			return err
		}},
		{"generate an image under an ISO's name", func() error {
			_, err := cl.GenerateImage(kit.Ctx(t), kit.NS, api.GenerateImageRequest{Name: "shared", Size: "1G"})
			return err
		}},
	} {
		if err := tc.call(); api.CodeOf(err) != http.StatusConflict || !strings.Contains(err.Error(), "already exists") {
			t.Errorf("%s: %v, want 409", tc.name, err)
		}
	}
	if imgs, _ := cl.ListImages(kit.Ctx(t), kit.NS); len(imgs) != 1 {
		t.Fatalf("images %+v", imgs)
	}
}

// Ranges are answered alike by the peer that holds the blob and by one that
// relays it: a refused range is a 416 Status with "bytes */<size>", and
// several ranges arrive as multipart with their boundary.
func TestImage_download_ranges(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	c.WaitLeader()
	holder, other := c.Members[0], c.Members[1]
	path := kit.TinyImage(t)
	want, _ := os.ReadFile(path)
	size := len(want)
	kit.Upload(t, c.Client(holder), "tiny", path)
	c.WaitFor("the image known to the other peer", 10*time.Second, func() error {
		_, err := c.Client(other).GetImage(kit.Ctx(t), kit.NS, "tiny")
		return err
	})
	get := func(m *testcluster.Member, rng string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+m.Peer.APIAddr()+"/api/v1/namespaces/"+kit.NS+"/images/tiny/download", nil)
		req.Header.Set("Authorization", "Bearer "+c.Client(m).Token)
		req.Header.Set("Range", rng)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	for _, m := range []*testcluster.Member{holder, other} {
		for _, rng := range []string{"bytes=-0", fmt.Sprintf("bytes=%d-", size), "bytes=5-2", "bytes=x-1", "items=0-1"} {
			resp, b := get(m, rng)
			var st api.Status
			if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable || json.Unmarshal(b, &st) != nil || st.Code != 416 ||
				resp.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", size) {
				t.Errorf("through %s, %s: %d %v %s", m.Name, rng, resp.StatusCode, resp.Header, b)
			}
		}
		resp, b := get(m, "bytes=0-9")
		if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(b, want[:10]) || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 0-9/%d", size) {
			t.Errorf("through %s, one range: %d %v", m.Name, resp.StatusCode, resp.Header)
		}
		resp, b = get(m, "bytes=0-9,20-29")
		mt, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if resp.StatusCode != http.StatusPartialContent || mt != "multipart/byteranges" || params["boundary"] == "" {
			t.Fatalf("through %s, two ranges: %d %v", m.Name, resp.StatusCode, resp.Header)
		}
		mr := multipart.NewReader(bytes.NewReader(b), params["boundary"])
		for _, part := range [][]byte{want[:10], want[20:30]} {
			p, err := mr.NextPart()
			if err != nil {
				t.Fatalf("through %s: %v", m.Name, err)
			}
			if got, _ := io.ReadAll(p); !bytes.Equal(got, part) {
				t.Fatalf("through %s: a part of %d bytes", m.Name, len(got))
			}
		}
	}
}

// Tag and untag answer the node record the list shows, images it holds
// (cachedImages) included.
func TestNode_tag_answers_the_whole_record(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	c.WaitLeader()
	m := c.Members[0]
	cl := c.Client(m)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	listed := func() api.Node {
		t.Helper()
		for _, n := range mustNodes(t, cl) {
			if n.Name == m.Name {
				return n
			}
		}
		t.Fatal("the node is not listed")
		return api.Node{}
	}
	tagged, err := cl.TagNode(kit.Ctx(t), kit.NS, m.Name, "ssd")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tagged, listed()) || !slices.Contains(tagged.CachedImages, "tiny") {
		t.Fatalf("tag answered %+v, the list shows %+v", tagged, listed())
	}
	untagged, err := cl.UntagNode(kit.Ctx(t), kit.NS, m.Name, "ssd")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(untagged, listed()) || !slices.Contains(untagged.CachedImages, "tiny") {
		t.Fatalf("untag answered %+v, the list shows %+v", untagged, listed())
	}
}

// A macOS restore image (IPSW) uploads as an ISO that installs macOS: a
// deploy with it is a macOS guest, which only an Apple silicon vz node
// takes; this cluster has none, and the refusal says why.
func TestISO_restore_image_is_a_macos_install(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	cl := c.Client(c.WaitLeader())
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	archive := func(files map[string]string) []byte {
		var zb bytes.Buffer
		zw := zip.NewWriter(&zb)
		for n, content := range files {
			w, _ := zw.Create(n)
			_, _ = w.Write([]byte(content))
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return zb.Bytes()
	}
	// A zip that is not a restore image is told what it lacks, not that it
	// is no ISO 9660 image.
	bad := archive(map[string]string{"Restore.plist": "<plist/>"})
	if _, err := cl.UploadISO(kit.Ctx(t), kit.NS, "broken.ipsw", bytes.NewReader(bad), int64(len(bad))); api.CodeOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "no BuildManifest.plist") {
		t.Fatalf("a zip without a manifest: %v", err)
	}
	zb := archive(map[string]string{
		"BuildManifest.plist": `<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>ProductVersion</key><string>15.1</string></dict></plist>`,
		"Restore.plist":       "<plist/>",
	})
	iso, err := cl.UploadISO(kit.Ctx(t), kit.NS, "sequoia.ipsw", bytes.NewReader(zb), int64(len(zb)))
	if err != nil {
		t.Fatal(err)
	}
	if rec, ok := c.Members[0].Peer.FSM().ISO(kit.NS, iso.Name); !ok || rec.OS != raftfsm.OSMacOS || rec.Format != diskcheck.FormatIPSW {
		t.Fatalf("the restore image's record %+v", rec)
	}
	_, err = cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", ISO: "sequoia.ipsw", Name: "mac", CPU: kit.Intp(1), Memory: kit.Floatp(0.25)})
	if err == nil || !strings.Contains(err.Error(), "a macOS image runs on Apple silicon Macs") {
		t.Fatalf("a macOS install on a cluster without Macs: %v", err)
	}
}
