package fake

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/svc-project/svc/hypervisor"
)

var _ hypervisor.MemorySnapshots = (*Driver)(nil)

// fakeMemoryMagic starts a fake memory file; the domain's name follows.
const fakeMemoryMagic = "svc-fake-memory\n"

// SaveMemory writes a file naming the domain and stops it.
func (f *Driver) SaveMemory(_ context.Context, name, path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("save-memory", name); err != nil {
		return err
	}
	d, err := f.get(name)
	if err != nil {
		return err
	}
	if d.state != hypervisor.StateRunning && d.state != hypervisor.StatePaused {
		return fmt.Errorf("save the memory of %s: it is %s", name, d.state)
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("memory file: %w", err)
	}
	_, err = out.WriteString(fakeMemoryMagic + name)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("memory file: %w", err)
	}
	d.state = hypervisor.StateShutoff
	return nil
}

// RestoreMemory starts the domain a SaveMemory file names.
func (f *Driver) RestoreMemory(_ context.Context, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("memory file: %w", err)
	}
	name, ok := strings.CutPrefix(string(b), fakeMemoryMagic)
	if !ok {
		return fmt.Errorf("memory file %s: not one SaveMemory wrote", path)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("restore-memory", name); err != nil {
		return err
	}
	d, err := f.get(name)
	if err != nil {
		return err
	}
	d.state = hypervisor.StateRunning
	return nil
}

// SetMemoryDir makes dir the directory of the fake's memory files
// (MemoryPath); without one, saves to MemoryPath fail.
func (f *Driver) SetMemoryDir(dir string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.memoryDir = dir
}

// MemoryPath is name's memory file in the directory SetMemoryDir gave.
func (f *Driver) MemoryPath(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.memoryDir == "" {
		return ""
	}
	return filepath.Join(f.memoryDir, name+".state")
}

// RestoreAs starts domain s, running, from the memory file SaveMemory
// wrote for from, which must name from.
func (f *Driver) RestoreAs(_ context.Context, from string, s hypervisor.Spec) error {
	b, err := os.ReadFile(f.MemoryPath(from))
	if err != nil {
		return fmt.Errorf("memory file: %w", err)
	}
	if name, ok := strings.CutPrefix(string(b), fakeMemoryMagic); !ok || name != from {
		return fmt.Errorf("memory file of %s: not one SaveMemory wrote for it", from)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("restore-as", s.Name); err != nil {
		return err
	}
	if _, ok := f.domains[s.Name]; ok {
		return fmt.Errorf("restore %s: %w", s.Name, os.ErrExist)
	}
	f.domains[s.Name] = &fakeDomain{spec: s, state: hypervisor.StateRunning, disk: 1}
	return nil
}

var _ hypervisor.HotClaimer = (*Driver)(nil)

// ClaimHot hands the running domain s.Name to a VM: its spec becomes s
// (forwards, screen). A domain that is not running is refused, as a guest
// that cannot be handed over running is never used.
func (f *Driver) ClaimHot(_ context.Context, s hypervisor.Spec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("claim-hot", s.Name); err != nil {
		return err
	}
	d, err := f.get(s.Name)
	if err != nil {
		return err
	}
	if d.state != hypervisor.StateRunning {
		return fmt.Errorf("claim %s: the domain is %s, not running", s.Name, d.state)
	}
	d.spec = s
	return nil
}
