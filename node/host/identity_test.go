package host

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/raftfsm"
)

// identityDriver is a fake hypervisor whose guests have an NVRAM and a
// hardware model, as vz's macOS guests do.
type identityDriver struct {
	*fake.Driver
	nvram string
	hw    []byte
}

func (d identityDriver) Identity(string) (string, []byte, error) { return d.nvram, d.hw, nil }

func TestKeepIdentity_cases(t *testing.T) {
	images, err := imagestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	nvram := filepath.Join(t.TempDir(), "nvram.bin")
	content := []byte("auxiliary storage of a macOS guest")
	if err := os.WriteFile(nvram, content, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	want := "sha256:" + hex.EncodeToString(sum[:])
	drv := identityDriver{Driver: fake.New("svc.h."), nvram: nvram, hw: []byte("J314sAP")}
	for _, tc := range []struct {
		name   string
		driver hypervisor.Driver
		os     string
		kept   bool
	}{
		{"macos_guest_keeps_nvram_and_model", drv, raftfsm.OSMacOS, true},
		{"linux_guest_keeps_nothing", drv, raftfsm.OSLinux, false},
		{"driver_without_identity", fake.New("svc.h."), raftfsm.OSMacOS, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Host{cfg: Config{Driver: tc.driver, Images: images}}
			var done raftfsm.VMImageOpDone
			lease, err := h.keepIdentity(context.Background(), raftfsm.VM{OS: tc.os}, "svc.h.default.vm", &done)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.kept {
				if lease != nil || done.NVRAMDigest != "" || done.HardwareModel != "" {
					t.Fatalf("kept %+v for a guest without identity", done)
				}
				return
			}
			defer lease.Release()
			if done.NVRAMDigest != want || done.NVRAMSize != int64(len(content)) || !images.Has(want) {
				t.Fatalf("NVRAM %s (%d bytes), want %s in the store", done.NVRAMDigest, done.NVRAMSize, want)
			}
			if done.OS != raftfsm.OSMacOS || done.HardwareModel != base64.StdEncoding.EncodeToString(drv.hw) {
				t.Fatalf("guest facts %+v", done)
			}
		})
	}
}
