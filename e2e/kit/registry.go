package kit

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/testkit/registrytest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// PushDisk pushes a raw disk image to ref in 1 MiB chunks.
func PushDisk(t *testing.T, reg *registrytest.Server, ref string, disk []byte) ocidisk.PushResult {
	return PushKind(t, reg, ref, disk, ocidisk.KindImage)
}

// PushKind pushes a disk of a kind (image or ISO) to ref in 1 MiB chunks.
func PushKind(t *testing.T, reg *registrytest.Server, ref string, disk []byte, kind string) ocidisk.PushResult {
	t.Helper()
	return PushConfig(t, reg, ref, disk, ocidisk.Config{Kind: kind, Arch: "amd64", Description: "pushed by the test"})
}

// PushConfig pushes a disk to ref in 1 MiB chunks with the config given
// (whose digest, when set, is written as the disk's whatever it is).
func PushConfig(t *testing.T, reg *registrytest.Server, ref string, disk []byte, cfg ocidisk.Config) ocidisk.PushResult {
	t.Helper()
	cfg.ChunkSize = 1 << 20
	path := filepath.Join(t.TempDir(), "disk.raw")
	if err := os.WriteFile(path, disk, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := ocidisk.ParseReference(ref, true, false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ocidisk.Push(context.Background(), r, ocidisk.Registry{Username: reg.Username, Password: reg.Password, Insecure: true}, path, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// WaitJob polls a job until it ends (2 minutes at most) and returns it.
func WaitJob(t *testing.T, c *testcluster.Cluster, cl *api.Client, name string) api.Job {
	t.Helper()
	return WaitJobFor(t, c, cl, name, 2*time.Minute)
}

// WaitJobFor polls a job until it ends.
func WaitJobFor(t *testing.T, c *testcluster.Cluster, cl *api.Client, name string, wait time.Duration) api.Job {
	t.Helper()
	var j api.Job
	c.WaitFor("job "+name+" ends", wait, func() error {
		var err error
		if j, err = cl.GetJob(context.Background(), NS, name); err != nil {
			return err
		}
		if j.State != api.JobSucceeded && j.State != api.JobFailed {
			return errors.New(j.State)
		}
		return nil
	})
	return j
}

// PushContainerDisk pushes a containerDisk image: one tar layer holding the
// disk file at /disk/disk.qcow2.
func PushContainerDisk(t *testing.T, reg *registrytest.Server, ref, disk string) {
	t.Helper()
	fi, err := os.Stat(disk)
	if err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() {
			f, err := os.Open(disk)
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			defer f.Close()
			tw := tar.NewWriter(pw)
			_ = tw.WriteHeader(&tar.Header{Name: "disk/", Typeflag: tar.TypeDir, Mode: 0o555})
			_ = tw.WriteHeader(&tar.Header{Name: "disk/disk.qcow2", Typeflag: tar.TypeReg, Mode: 0o444, Size: fi.Size()})
			_, err = io.Copy(tw, f)
			pw.CloseWithError(errors.Join(err, tw.Close()))
		}()
		return pr, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.ConfigFile(img, &v1.ConfigFile{OS: "linux", Architecture: "amd64"}); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, remote.WithAuth(&authn.Basic{Username: reg.Username, Password: reg.Password}), remote.WithTransport(reg.Transport())); err != nil {
		t.Fatal(err)
	}
}
