package hypervisor

import (
	"context"
	"fmt"
	"os"
	"strings"
)

var _ MemorySnapshots = (*Fake)(nil)

// fakeMemoryMagic starts a fake memory file; the domain's name follows.
const fakeMemoryMagic = "svc-fake-memory\n"

// SaveMemory writes a file naming the domain and stops it.
func (f *Fake) SaveMemory(_ context.Context, name, path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("save-memory", name); err != nil {
		return err
	}
	d, err := f.get(name)
	if err != nil {
		return err
	}
	if d.state != StateRunning && d.state != StatePaused {
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
	d.state = StateShutoff
	return nil
}

// RestoreMemory starts the domain a SaveMemory file names.
func (f *Fake) RestoreMemory(_ context.Context, path string) error {
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
	d.state = StateRunning
	return nil
}
