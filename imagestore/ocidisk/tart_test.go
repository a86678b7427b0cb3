package ocidisk

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/svc-project/svc/testkit/registrytest"
)

func TestAppleLZ4_round_trip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 100<<10)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"compressible", bytes.Repeat([]byte("a disk sector of text "), 20000)},
		{"incompressible_blocks_stored", noise},
		{"zeros", make([]byte, 300<<10)},
		{"one_byte", []byte{7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := registrytest.AppleLZ4(tc.data)
			decode := func(z []byte, want int) ([]byte, error) {
				var dec appleLZ4Decoder
				var out []byte
				err := dec.decode(bytes.NewReader(z), int64(want), func(b []byte) error { out = append(out, b...); return nil })
				return out, err
			}
			out, err := decode(z, len(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, tc.data) {
				t.Fatal("decoded bytes differ")
			}
			if _, err := decode(z, len(tc.data)+1); !errors.Is(err, errAppleLZ4) {
				t.Fatalf("a stream shorter than announced: %v", err)
			}
			if _, err := decode(z[:len(z)-4], len(tc.data)); !errors.Is(err, errAppleLZ4) {
				t.Fatalf("a stream without its end: %v", err)
			}
		})
	}
}

func TestPullTart_round_trip(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	creds := Registry{Username: reg.Username, Password: reg.Password, Insecure: true}
	ctx := ctxT(t)
	_, disk := testDisk(t, 3)
	nvram := bytes.Repeat([]byte("efi vars "), 1000)
	r := ref(t, reg.Host+"/cirruslabs/debian:latest")
	registrytest.PushTart(t, r, registrytest.TartImage{
		Config: registrytest.TartConfig{Version: 1, OS: "linux", Arch: "amd64", CPUCount: 2, MemorySize: 1 << 30, MACAddress: "7e:5f:00:00:00:01"},
		Disk:   disk, NVRAM: nvram, LayerSize: 1 << 20,
	}, creds.options(ctx)...)
	res, err := Resolve(ctx, r, creds)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tart == nil || res.SVCDisk() || res.ContainerDisk {
		t.Fatalf("resolved %+v: not a Tart image", res)
	}
	if res.Tart.DiskSize != int64(len(disk)) || len(res.Tart.Disk) < 2 || res.Tart.Config.Arch != "amd64" {
		t.Fatalf("tart %+v", res.Tart)
	}
	dir := t.TempDir()
	dst, nv := filepath.Join(dir, "disk"), filepath.Join(dir, "nvram")
	if err := PullTart(ctx, res, creds, dst, nv, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, disk) {
		t.Fatal("the pulled disk differs from the pushed one")
	}
	if got, _ := os.ReadFile(nv); !bytes.Equal(got, nvram) {
		t.Fatal("the NVRAM was not kept")
	}

	// a layer whose bytes are not what its annotation says is refused
	bad := res
	tc := *res.Tart
	tc.Disk = append([]TartLayer(nil), tc.Disk...)
	tc.Disk[1].UncompressedHash = tc.Disk[0].UncompressedHash
	bad.Tart = &tc
	dst2, nv2 := filepath.Join(dir, "disk2"), filepath.Join(dir, "nvram2")
	if err := PullTart(ctx, bad, creds, dst2, nv2, nil); err == nil || !strings.Contains(err.Error(), "decodes to") {
		t.Fatalf("a layer of other content: %v", err)
	}
	if _, err := os.Stat(dst2); !os.IsNotExist(err) {
		t.Fatal("a failed pull left its disk")
	}

	// A layer whose annotation says 512 MiB (its bytes are the small layer
	// they are): refused, with memory bounded by what was read, not by what
	// the annotation says (the whole layer was once allocated up front).
	lie := res
	lt := *res.Tart
	lt.Disk = append([]TartLayer(nil), lt.Disk[0])
	lt.Disk[0].Size, lt.DiskSize = 512<<20, 512<<20
	lie.Tart = &lt
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err = PullTart(ctx, lie, creds, filepath.Join(dir, "disk3"), filepath.Join(dir, "nvram3"), nil)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "decoded") {
		t.Fatalf("a layer that lies about its size: %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Fatalf("pulling a layer that claims 512 MiB allocated %d MiB", alloc>>20)
	}
}
