package peer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOffer_reserve(t *testing.T) {
	cases := []struct {
		name    string
		cpus    int
		mem     int64
		wantCPU int
		wantMem int64
	}{
		{"big host keeps a tenth", 32, 100 << 30, 31, 90 << 30},
		{"small host keeps 1 GiB", 2, 4 << 30, 1, 3 << 30},
		{"one cpu is offered", 1, 512 << 20, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := offer(c.cpus, c.mem, 0)
			if got.CPU != c.wantCPU || got.MemoryBytes != c.wantMem {
				t.Fatalf("offer = %+v", got)
			}
		})
	}
}

func TestParseMemTotal_cases(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    int64
		wantErr bool
	}{
		{"normal", "MemFree: 1 kB\nMemTotal:       24576000 kB\n", 24576000 * 1024, false},
		{"missing", "MemFree: 1 kB\n", 0, true},
		{"garbage", "MemTotal: lots kB\n", 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseMemTotal(strings.NewReader(c.in))
			if (err != nil) != c.wantErr || got != c.want {
				t.Fatalf("got %d, %v", got, err)
			}
		})
	}
}

func TestCountGPUs_skips_boot_display(t *testing.T) {
	dir := t.TempDir()
	dev := func(name, class, boot string) {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		_ = os.WriteFile(filepath.Join(d, "class"), []byte(class+"\n"), 0o644)
		if boot != "" {
			_ = os.WriteFile(filepath.Join(d, "boot_vga"), []byte(boot+"\n"), 0o644)
		}
	}
	dev("0000:00:02.0", "0x030000", "1") // host display
	dev("0000:01:00.0", "0x030200", "")  // 3D controller
	dev("0000:02:00.0", "0x030000", "0") // second display card
	dev("0000:03:00.0", "0x020000", "")  // NIC
	if got := countGPUs(dir); got != 2 {
		t.Fatalf("countGPUs = %d, want 2", got)
	}
}
