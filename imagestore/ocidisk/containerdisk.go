package ocidisk

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// ErrNoDisk is wrapped when a container image holds no file under /disk/.
var ErrNoDisk = errors.New("no disk file under /disk/ in the image")

// PullContainerDisk writes the disk of a KubeVirt containerDisk image (the
// first regular file under /disk/ of its file system, a qcow2 or raw file)
// to dst, for the platform linux/arch, and returns its size. Zeros are left
// as holes.
func PullContainerDisk(ctx context.Context, ref name.Reference, reg Registry, arch, dst string, progress Progress) (int64, error) {
	opts := append(reg.options(ctx), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}))
	img, err := remote.Image(ref, opts...)
	if err != nil {
		return 0, fmt.Errorf("pull %s: %w", ref, err)
	}
	var total int64
	if layers, err := img.Layers(); err == nil {
		for _, l := range layers {
			if n, err := l.Size(); err == nil {
				total += n
			}
		}
	}
	fs := mutate.Extract(img)
	defer fs.Close()
	tr := tar.NewReader(fs)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("pull %s: %w", ref, ErrNoDisk)
		}
		if err != nil {
			return 0, fmt.Errorf("pull %s: %w", ref, err)
		}
		p := path.Clean("/" + h.Name)
		if h.Typeflag != tar.TypeReg || !strings.HasPrefix(p, "/disk/") {
			continue
		}
		n, err := copySparse(ctx, dst, tr, h.Size, func(done int64) {
			if progress != nil {
				progress(min(done, total), max(total, done))
			}
		})
		if err != nil {
			return 0, fmt.Errorf("pull %s: %s: %w", ref, p, err)
		}
		return n, nil
	}
}

// copySparse copies size bytes from r into a new file at dst, leaving
// zeros as holes, and flushes it.
func copySparse(ctx context.Context, dst string, r io.Reader, size int64, progress func(int64)) (int64, error) {
	f, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return 0, err
	}
	buf := make([]byte, 4<<20)
	var off int64
	for off < size {
		if err := ctx.Err(); err != nil {
			return off, err
		}
		n, err := io.ReadFull(r, buf[:min(int64(len(buf)), size-off)])
		if n > 0 {
			if werr := WriteSparse(f, buf[:n], off); werr != nil {
				return off, werr
			}
			off += int64(n)
			progress(off)
		}
		if err != nil {
			return off, fmt.Errorf("read: %w", err)
		}
	}
	return off, f.Sync()
}
