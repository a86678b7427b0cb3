package peer_test

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
	gen, err := cl.GenerateImage(ctx(t), ns, api.GenerateImageRequest{Name: "blank", Size: "10G", Description: "for an install"})
	if err != nil || gen.Size != "10G" || gen.SourceType != "generated" || gen.State != api.ImageReady || gen.Description != "for an install" {
		t.Fatalf("generate: %+v %v", gen, err)
	}
	if nodes, _ := cl.ListNodes(ctx(t), ns, true); !cached(nodes, f.Name, "blank") || cached(nodes, leader.Name, "blank") {
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
		if _, err := cl.GenerateImage(ctx(t), ns, c.req); api.CodeOf(err) != http.StatusBadRequest {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	if _, err := cl.GenerateImage(ctx(t), ns, api.GenerateImageRequest{Name: "blank", Size: "1G"}); api.CodeOf(err) != http.StatusConflict {
		t.Fatalf("a taken name: %v", err)
	}
	if n, tmp := blobs(t, f); n != nBlobs || tmp != 0 {
		t.Fatalf("refusals left files: %d blobs (%d before), %d staging", n, nBlobs, tmp)
	}

	cp, err := cl.CopyImage(ctx(t), ns, "blank", api.CopyRequest{NewName: "blank-copy"})
	if err != nil || cp.Digest != gen.Digest || cp.Description != gen.Description || cp.SourceType != "local" || cp.Source != "blank" {
		t.Fatalf("copy: %+v %v", cp, err)
	}
	if _, err := cl.CopyImage(ctx(t), ns, "blank", api.CopyRequest{NewName: "bad/name"}); api.CodeOf(err) != http.StatusBadRequest {
		t.Fatalf("copy to a bad name: %v", err)
	}
	if d, err := cl.DescribeImage(ctx(t), ns, "blank-copy", "mine"); err != nil || d.Description != "mine" {
		t.Fatalf("describe: %+v %v", d, err)
	}
	if _, err := cl.CreateVMConfig(ctx(t), ns, api.VMConfig{Name: "uses-it", Image: "blank-copy"}); err != nil {
		t.Fatal(err)
	}
	err = cl.DeleteImage(ctx(t), ns, "blank-copy")
	if api.CodeOf(err) != http.StatusConflict || !strings.Contains(err.Error(), "vmconfig uses-it") {
		t.Fatalf("delete while a config uses it: %v", err)
	}
	if err := cl.DeleteVMConfig(ctx(t), ns, "uses-it"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"blank-copy", "blank"} {
		if err := cl.DeleteImage(ctx(t), ns, name); err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
	}
	if _, err := cl.GetImage(ctx(t), ns, "blank"); api.CodeOf(err) != http.StatusNotFound {
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
	path := tinyImage(t)
	want, _ := os.ReadFile(path)
	upload(t, c.Client(holder), "tiny", path)
	c.WaitFor("the image known to the other peer", 10*time.Second, func() error {
		_, err := c.Client(other).GetImage(ctx(t), ns, "tiny")
		return err
	})
	for _, m := range []*testcluster.Member{holder, other} {
		body, n, etag, err := c.Client(m).DownloadImage(ctx(t), ns, "tiny", 0)
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
		body, n, _, err = c.Client(m).DownloadImage(ctx(t), ns, "tiny", half)
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
	req, _ := http.NewRequest(http.MethodGet, "http://"+other.Peer.APIAddr()+"/api/v1/namespaces/"+ns+"/images/tiny/download", nil)
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
	upload(t, cl, "tiny", tinyImage(t))
	p := isoFile(t)
	fh, _ := os.Open(p)
	st, _ := fh.Stat()
	iso, err := cl.UploadISO(ctx(t), ns, "installer.iso", fh, st.Size())
	fh.Close()
	if err != nil || iso.SourceType != "userUpload" || iso.State != api.ImageReady {
		t.Fatalf("upload: %+v %v", iso, err)
	}
	nBlobs, _ := blobs(t, leader)
	if _, err := cl.UploadISO(ctx(t), ns, "text.iso", strings.NewReader(strings.Repeat("x", 40000)), 40000); api.CodeOf(err) != http.StatusBadRequest {
		t.Fatalf("a text file as an ISO: %v", err)
	}
	if n, tmp := blobs(t, leader); n != nBlobs || tmp != 0 {
		t.Fatalf("the refused ISO left files: %d blobs (%d before), %d staging", n, nBlobs, tmp)
	}
	if cp, err := cl.CopyISO(ctx(t), ns, "installer.iso", api.CopyRequest{NewName: "again.iso"}); err != nil || cp.Digest != iso.Digest {
		t.Fatalf("copy: %+v %v", cp, err)
	}
	if d, err := cl.DescribeISO(ctx(t), ns, "again.iso", "the same"); err != nil || d.Description != "the same" {
		t.Fatalf("describe: %+v %v", d, err)
	}
	if list, err := cl.ListISOs(ctx(t), ns); err != nil || len(list) != 2 {
		t.Fatalf("list: %+v %v", list, err)
	}
	vm, err := cl.DeployVM(ctx(t), ns, api.DeployRequest{Image: "tiny", ISO: "installer.iso", Name: "installing", Node: f.Name, CPU: intp(1), Memory: floatp(0.25)})
	if err != nil || vm.ISO != "installer.iso" {
		t.Fatalf("deploy with an ISO: %+v %v", vm, err)
	}
	spec, _ := f.Fake.Spec(hypervisor.DomainName(f.Name, ns, "installing"))
	if spec.ISO != f.Peer.Images().Path(iso.Digest) || !f.Peer.Images().Has(iso.Digest) {
		t.Fatalf("the ISO was not fetched to the host and attached: %q", spec.ISO)
	}
	if _, err := cl.DeployVM(ctx(t), ns, api.DeployRequest{Image: "tiny", ISO: "nope.iso"}); api.CodeOf(err) != http.StatusNotFound {
		t.Fatalf("deploy with an unknown ISO: %v", err)
	}
	if err := cl.DeleteISO(ctx(t), ns, "installer.iso"); api.CodeOf(err) != http.StatusConflict {
		t.Fatalf("delete while a VM uses it: %v", err)
	}
	if err := cl.DeleteVM(ctx(t), ns, "installing"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the ISO free", 10*time.Second, func() error { return cl.DeleteISO(ctx(t), ns, "installer.iso") })
	if _, err := cl.GetISO(ctx(t), ns, "installer.iso"); api.CodeOf(err) != http.StatusNotFound {
		t.Fatalf("after delete: %v", err)
	}
	if err := cl.DeleteISO(ctx(t), ns, "again.iso"); err != nil {
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
	if _, err := cl.UploadISO(ctx(t), ns, "shared", f, fi.Size()); err != nil {
		t.Fatal(err)
	}
	img := upload(t, cl, "disk", tinyImage(t))
	if _, err := cl.DeployVM(ctx(t), ns, api.DeployRequest{Image: img.Name, Name: "saver", CPU: intp(1)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"save a VM onto an ISO's name", func() error {
			_, err := cl.SaveVM(ctx(t), ns, "saver", api.SaveRequest{ImageName: "shared"})
			return err
		}},
		{"copy an image onto an ISO's name", func() error {
			_, err := cl.CopyImage(ctx(t), ns, "disk", api.CopyRequest{NewName: "shared"})
			return err
		}},
		{"copy an ISO onto an image's name", func() error {
			_, err := cl.CopyISO(ctx(t), ns, "shared", api.CopyRequest{NewName: "disk"})
			return err
		}},
		{"upload an image under an ISO's name", func() error {
			b := disktest.Read(t, tinyImage(t))
			_, err := cl.UploadImage(ctx(t), ns, "shared", bytes.NewReader(b), int64(len(b)))
			return err
		}},
		{"generate an image under an ISO's name", func() error {
			_, err := cl.GenerateImage(ctx(t), ns, api.GenerateImageRequest{Name: "shared", Size: "1G"})
			return err
		}},
	} {
		if err := tc.call(); api.CodeOf(err) != http.StatusConflict || !strings.Contains(err.Error(), "already exists") {
			t.Errorf("%s: %v, want 409", tc.name, err)
		}
	}
	if imgs, _ := cl.ListImages(ctx(t), ns); len(imgs) != 1 {
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
	path := tinyImage(t)
	want, _ := os.ReadFile(path)
	size := len(want)
	upload(t, c.Client(holder), "tiny", path)
	c.WaitFor("the image known to the other peer", 10*time.Second, func() error {
		_, err := c.Client(other).GetImage(ctx(t), ns, "tiny")
		return err
	})
	get := func(m *testcluster.Member, rng string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+m.Peer.APIAddr()+"/api/v1/namespaces/"+ns+"/images/tiny/download", nil)
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
	upload(t, cl, "tiny", tinyImage(t))
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
	tagged, err := cl.TagNode(ctx(t), ns, m.Name, "ssd")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tagged, listed()) || !slices.Contains(tagged.CachedImages, "tiny") {
		t.Fatalf("tag answered %+v, the list shows %+v", tagged, listed())
	}
	untagged, err := cl.UntagNode(ctx(t), ns, m.Name, "ssd")
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
	upload(t, cl, "tiny", tinyImage(t))
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
	if _, err := cl.UploadISO(ctx(t), ns, "broken.ipsw", bytes.NewReader(bad), int64(len(bad))); api.CodeOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "no BuildManifest.plist") {
		t.Fatalf("a zip without a manifest: %v", err)
	}
	zb := archive(map[string]string{
		"BuildManifest.plist": `<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>ProductVersion</key><string>15.1</string></dict></plist>`,
		"Restore.plist":       "<plist/>",
	})
	iso, err := cl.UploadISO(ctx(t), ns, "sequoia.ipsw", bytes.NewReader(zb), int64(len(zb)))
	if err != nil {
		t.Fatal(err)
	}
	if rec, ok := c.Members[0].Peer.FSM().ISO(ns, iso.Name); !ok || rec.OS != raftfsm.OSMacOS || rec.Format != diskcheck.FormatIPSW {
		t.Fatalf("the restore image's record %+v", rec)
	}
	_, err = cl.DeployVM(ctx(t), ns, api.DeployRequest{Image: "tiny", ISO: "sequoia.ipsw", Name: "mac", CPU: intp(1), Memory: floatp(0.25)})
	if err == nil || !strings.Contains(err.Error(), "a macOS image runs on Apple silicon Macs") {
		t.Fatalf("a macOS install on a cluster without Macs: %v", err)
	}
}
