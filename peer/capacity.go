package peer

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/svc-project/svc/raftfsm"
)

// Host reserve: what a peer keeps for its host when offering capacity to VMs.
const (
	reserveCPU      = 1
	minReserveBytes = 1 << 30 // at least 1 GiB, or 10 % of memory
)

// HostCapacity reads the host's CPUs, memory and GPUs and returns what it
// can offer to VMs after the host's own reserve.
func HostCapacity() (raftfsm.Capacity, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return raftfsm.Capacity{}, fmt.Errorf("read host memory: %w", err)
	}
	defer f.Close()
	mem, err := parseMemTotal(f)
	if err != nil {
		return raftfsm.Capacity{}, err
	}
	return offer(runtime.NumCPU(), mem, countGPUs("/sys/bus/pci/devices")), nil
}

// offer subtracts the host reserve from the host's totals.
func offer(cpus int, memBytes int64, gpus int) raftfsm.Capacity {
	cpu := cpus
	if cpus > reserveCPU {
		cpu = cpus - reserveCPU
	}
	reserve := max(memBytes/10, minReserveBytes)
	mem := max(memBytes-reserve, 0)
	return raftfsm.Capacity{CPU: cpu, MemoryBytes: mem, GPU: gpus}
}

func parseMemTotal(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse MemTotal %q: %w", fields[1], err)
			}
			return kb * 1024, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read meminfo: %w", err)
	}
	return 0, fmt.Errorf("no MemTotal in meminfo")
}

// countGPUs counts PCI display controllers (class 0x03xxxx) that are not the
// host's boot display: those are what could be passed through to VMs.
func countGPUs(pciDir string) int {
	entries, err := os.ReadDir(pciDir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		class, err := os.ReadFile(filepath.Join(pciDir, e.Name(), "class"))
		if err != nil || !strings.HasPrefix(strings.TrimSpace(string(class)), "0x03") {
			continue
		}
		if boot, err := os.ReadFile(filepath.Join(pciDir, e.Name(), "boot_vga")); err == nil && strings.TrimSpace(string(boot)) == "1" {
			continue
		}
		n++
	}
	return n
}
