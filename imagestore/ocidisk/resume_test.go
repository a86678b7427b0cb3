package ocidisk

import (
	"bytes"
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/testkit/registrytest"
)

// dyingDisk is a partial disk whose pull dies after it has written a number
// of chunks: every later Wrote fails.
type dyingDisk struct {
	*imagestore.Partial
	mu    sync.Mutex
	left  int
	wrote []int64
}

var errDied = errors.New("the pull died")

func (d *dyingDisk) Wrote(off, size int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.left == 0 {
		return errDied
	}
	d.left--
	d.wrote = append(d.wrote, off)
	return d.Partial.Wrote(off, size)
}

// A pull that dies after two chunks leaves a partial disk; the next pull
// of the same disk fetches only the rest, even where the dead pull left
// garbage in a chunk it had not finished, and the disk is whole.
func TestPullInto_resumes_an_interrupted_pull(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	creds := Registry{Username: reg.Username, Password: reg.Password, Insecure: true}
	ctx := ctxT(t)
	path, data := testDisk(t, 8)
	for i := 0; i < 8; i += 2 { // the data chunks end in zeros
		clear(data[i*testChunk+testChunk/2 : (i+1)*testChunk])
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r := ref(t, reg.Host+"/team/disk:v1")
	if _, err := Push(ctx, r, creds, path, Config{Kind: KindImage, ChunkSize: testChunk}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := Resolve(ctx, r, creds)
	if err != nil {
		t.Fatal(err)
	}
	store, err := imagestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	part, err := store.OpenPartial(res.Config.Digest, res.Config.VirtualSize)
	if err != nil {
		t.Fatal(err)
	}
	dying := &dyingDisk{Partial: part, left: 2}
	if _, err := PullInto(ctx, res, creds, dying, nil, nil); !errors.Is(err, errDied) {
		t.Fatalf("the dying pull: %v", err)
	}
	part.Close()
	// A chunk the dead pull had not finished holds garbage (a torn write)
	// where the disk has zeros.
	var unfinished Chunk
	for _, c := range res.Chunks {
		if c.Size == testChunk && c.Offset != dying.wrote[0] && c.Offset != dying.wrote[1] {
			unfinished = c
			break
		}
	}
	f, err := os.OpenFile(store.PartialPath(res.Config.Digest), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xee}, testChunk/2), unfinished.Offset+testChunk/2); err != nil {
		t.Fatal(err)
	}
	f.Close()

	part, err = store.OpenPartial(res.Config.Digest, res.Config.VirtualSize)
	if err != nil {
		t.Fatal(err)
	}
	if part.Resumed() != 2 {
		t.Fatalf("the partial disk holds %d chunks, not 2", part.Resumed())
	}
	before := reg.Sent()
	pr, err := PullInto(ctx, res, creds, part, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sent := reg.Sent() - before
	if pr.ChunksResumed != 2 || pr.ChunksFetched != len(res.Chunks)-2 {
		t.Fatalf("the resumed pull: %+v of %d chunks", pr, len(res.Chunks))
	}
	if sent > int64(len(res.Chunks)-1)*testChunk {
		t.Fatalf("the resumed pull took %d bytes from the registry", sent)
	}
	st, err := part.Stage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Discard()
	back, _ := os.ReadFile(st.Path())
	if st.Digest != res.Config.Digest || !bytes.Equal(back, data) {
		t.Fatalf("the resumed disk is %s, not %s", st.Digest, res.Config.Digest)
	}
	if _, err := os.Stat(store.PartialPath(res.Config.Digest)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the partial disk is still there after staging: %v", err)
	}
}
