package ocidisk

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/testkit/registrytest"
)

const testChunk = 1 << 20

// testDisk writes a disk of n chunks: random data in the even chunks, holes
// in the odd ones, and a short last chunk.
func testDisk(t *testing.T, n int) (string, []byte) {
	t.Helper()
	data := make([]byte, n*testChunk+4096)
	for i := 0; i < n; i += 2 {
		_, _ = rand.Read(data[i*testChunk : (i+1)*testChunk])
	}
	_, _ = rand.Read(data[n*testChunk:])
	p := filepath.Join(t.TempDir(), "disk.raw")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, data
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func ref(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := ParseReference(s, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// chunkMap is a ChunkSource over a file already pulled.
type chunkMap struct {
	data   []byte
	chunks []Chunk
}

func (m chunkMap) ReadChunk(d string, buf []byte) bool {
	for _, c := range m.chunks {
		if c.Digest == d && c.Size == int64(len(buf)) {
			copy(buf, m.data[c.Offset:c.Offset+c.Size])
			return true
		}
	}
	return false
}

// A disk pushed and pulled comes back byte for byte, sparse; a second push
// after one chunk changed sends that chunk alone; a pull next to a copy of
// the old disk fetches that chunk alone.
func TestPushPull_roundTrip(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	creds := Registry{Username: reg.Username, Password: reg.Password, Insecure: true}
	ctx := ctxT(t)
	path, data := testDisk(t, 8)
	r := ref(t, reg.Host+"/team/disk:v1")
	var last int64
	res, err := Push(ctx, r, creds, path, Config{Kind: KindImage, Arch: "amd64", Description: "d", ChunkSize: testChunk}, func(done, total int64) { last = done })
	if err != nil {
		t.Fatalf("push: %v\n%s", err, reg.Log())
	}
	if len(res.Chunks) != 5 || res.ChunksSent != 5 || last != int64(len(data)) {
		t.Fatalf("push: %d chunks, %d sent, progress %d", len(res.Chunks), res.ChunksSent, last)
	}
	wantDigest, _, _ := imagestore.HashReader(ctx, bytes.NewReader(data))
	got, err := Resolve(ctx, r, creds)
	if err != nil {
		t.Fatal(err)
	}
	if got.ContainerDisk || got.Config.Digest != wantDigest || got.Config.VirtualSize != int64(len(data)) || got.ManifestDigest != res.ManifestDigest || got.Config.Description != "d" {
		t.Fatalf("resolved %+v", got)
	}
	dst := filepath.Join(t.TempDir(), "pulled.raw")
	pr, err := Pull(ctx, got, creds, dst, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	back, _ := os.ReadFile(dst)
	if !bytes.Equal(back, data) || pr.ChunksFetched != 5 {
		t.Fatalf("pulled %d bytes (%d chunks) differ from the %d pushed", len(back), pr.ChunksFetched, len(data))
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dst, &st); err != nil || st.Blocks*512 > int64(len(data))*3/4 {
		t.Fatalf("the pulled disk is not sparse: %d bytes allocated of %d", st.Blocks*512, len(data))
	}

	// One chunk changes: the second push sends it alone.
	copy(data[2*testChunk+10:], []byte("changed"))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	before := reg.Received()
	res2, err := Push(ctx, ref(t, reg.Host+"/team/disk:v2"), creds, path, Config{Kind: KindImage, ChunkSize: testChunk}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sent := reg.Received() - before; res2.ChunksSent != 1 || sent > testChunk*3/2 || sent < testChunk {
		t.Fatalf("the second push sent %d chunks, %d bytes reached the registry", res2.ChunksSent, sent)
	}
	got2, err := Resolve(ctx, ref(t, reg.Host+"/team/disk:v2"), creds)
	if err != nil {
		t.Fatal(err)
	}
	pr2, err := Pull(ctx, got2, creds, dst, chunkMap{back, got.Chunks}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if back, _ = os.ReadFile(dst); !bytes.Equal(back, data) || pr2.ChunksFetched != 1 || pr2.ChunksLocal != 4 {
		t.Fatalf("second pull: %+v, equal %v", pr2, bytes.Equal(back, data))
	}
}

// Each failure names its cause: wrong credentials, an unknown tag, a
// registry that is down, a reference without a tag, plain HTTP without
// Insecure.
func TestPushPull_errors(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	ctx := ctxT(t)
	path, _ := testDisk(t, 2)
	good := Registry{Username: reg.Username, Password: reg.Password, Insecure: true}
	if _, err := Push(ctx, ref(t, reg.Host+"/a/b:c"), good, path, Config{Kind: KindImage, ChunkSize: testChunk}, nil); err != nil {
		t.Fatal(err)
	}
	bad := good
	bad.Password = "wrong"
	if _, err := Resolve(ctx, ref(t, reg.Host+"/a/b:c"), bad); !IsUnauthorized(err) {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := Push(ctx, ref(t, reg.Host+"/a/b:d"), bad, path, Config{Kind: KindImage, ChunkSize: testChunk}, nil); !IsUnauthorized(err) {
		t.Fatalf("push with a wrong password: %v", err)
	}
	if _, err := Resolve(ctx, ref(t, reg.Host+"/a/b:nope"), good); !IsNotFound(err) || !strings.Contains(Reason(err), "MANIFEST_UNKNOWN") {
		t.Fatalf("unknown tag: %v (%s)", err, Reason(err))
	}
	if _, err := Resolve(ctx, ref(t, reg.Host+"/a/b:c"), Registry{Username: reg.Username, Password: reg.Password}); err == nil {
		t.Fatal("a self-signed certificate was trusted without Insecure")
	}
	for _, s := range []string{reg.Host + "/a/b", "b:c", "/a:b", reg.Host + "/A/b:c"} {
		if _, err := ParseReference(s, false, false); !errors.Is(err, ErrBadReference) {
			t.Errorf("%q: %v", s, err)
		}
	}
	if r, err := ParseReference(reg.Host+"/a/b", false, true); err != nil || r.Identifier() != "latest" {
		t.Errorf("push default tag: %v %v", r, err)
	}
	reg.Stop()
	if _, err := Resolve(ctx, ref(t, reg.Host+"/a/b:c"), good); err == nil {
		t.Fatal("a registry that is down answered")
	}

	plain := registrytest.Start(t, registrytest.Options{Plain: true, Anonymous: true})
	r, _ := ParseReference(plain.Host+"/a/b:c", false, false)
	if _, err := Push(ctx, r, Registry{}, path, Config{Kind: KindImage, ChunkSize: testChunk}, nil); err == nil {
		t.Fatal("pushed over plain HTTP without Insecure")
	}
	if _, err := Push(ctx, ref(t, plain.Host+"/a/b:c"), Registry{Insecure: true}, path, Config{Kind: KindImage, ChunkSize: testChunk}, nil); err != nil {
		t.Fatalf("plain HTTP with Insecure: %v", err)
	}
}

// A KubeVirt-style containerDisk (a disk file under /disk/ in a tar layer)
// is recognised and its disk extracted whole.
func TestPullContainerDisk(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	creds := Registry{Username: reg.Username, Password: reg.Password, Insecure: true}
	ctx := ctxT(t)
	_, data := testDisk(t, 3)
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	_ = tw.WriteHeader(&tar.Header{Name: "disk/", Typeflag: tar.TypeDir, Mode: 0o755})
	_ = tw.WriteHeader(&tar.Header{Name: "disk/disk.img", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))})
	_, _ = tw.Write(data)
	_ = tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(tb.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	img, _ = mutate.ConfigFile(img, &v1.ConfigFile{OS: "linux", Architecture: "amd64"})
	r := ref(t, reg.Host+"/kubevirt/disk:1")
	if err := remote.Write(r, img, creds.options(ctx)...); err != nil {
		t.Fatal(err)
	}
	res, err := Resolve(ctx, r, creds)
	if err != nil || !res.ContainerDisk {
		t.Fatalf("resolved %+v %v", res, err)
	}
	dst := filepath.Join(t.TempDir(), "disk")
	n, err := PullContainerDisk(ctx, r, creds, "amd64", dst, nil)
	back, _ := os.ReadFile(dst)
	if err != nil || n != int64(len(data)) || !bytes.Equal(back, data) {
		t.Fatalf("pulled %d bytes: %v", n, err)
	}
	empty1, _ := mutate.AppendLayers(empty.Image, mustLayer(t, nil))
	r2 := ref(t, reg.Host+"/kubevirt/nodisk:1")
	if err := remote.Write(r2, empty1, creds.options(ctx)...); err != nil {
		t.Fatal(err)
	}
	if _, err := PullContainerDisk(ctx, r2, creds, "amd64", dst, nil); !errors.Is(err, ErrNoDisk) {
		t.Fatalf("no disk: %v", err)
	}
}

func mustLayer(t *testing.T, files map[string][]byte) v1.Layer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for n, d := range files {
		_ = tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(d))})
		_, _ = tw.Write(d)
	}
	_ = tw.Close()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A config is refused before anything is sized by it.
func TestConfig_validate_bounds(t *testing.T) {
	ok := Config{Kind: KindImage, Format: "raw", VirtualSize: 1 << 30, ChunkSize: DefaultChunkSize, Digest: "sha256:" + strings.Repeat("a", 64)}
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"valid", func(*Config) {}, ""},
		{"a chunk of a terabyte", func(c *Config) { c.ChunkSize = 1 << 40 }, "at most"},
		{"a disk of an exabyte", func(c *Config) { c.VirtualSize = 1 << 60 }, "at most"},
		{"the largest chunk a peer pushes", func(c *Config) { c.ChunkSize = MaxChunkSize }, ""},
		{"a format other than raw", func(c *Config) { c.Format = "qcow2" }, "not raw"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.mod(&cfg)
			err := cfg.validate()
			if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("validate = %v, want %q", err, c.want)
			}
		})
	}
}

// A push sizes its buffers by the disk, not by the chunk size: a 1 MiB
// disk pushed with 512 MiB chunks allocates a few MiB, not a gigabyte.
func TestPush_buffers_sized_by_the_disk(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	creds := Registry{Username: reg.Username, Password: reg.Password, Insecure: true}
	path := filepath.Join(t.TempDir(), "small.raw")
	data := make([]byte, 1<<20)
	copy(data, "a small disk")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := Push(ctxT(t), ref(t, reg.Host+"/team/small:v1"), creds, path, Config{Kind: KindImage, ChunkSize: MaxChunkSize}, nil); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Fatalf("a push of a 1 MiB disk allocated %d MiB", got>>20)
	}
}
