package templates

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
)

// loopback is where a building template's SSH forward listens: the peer
// alone looks at it.
const loopback = "127.0.0.1"

// domain is the template domain of key on this node.
func (m *Manager) domain(key string) string { return hypervisor.TemplateDomain(m.cfg.Name, key) }

// recordPath keeps a ready template's record.
func (m *Manager) recordPath(key string) string { return filepath.Join(m.cfg.Dir, key+".json") }

// build boots a template of shape sh from its image, waits until it is
// ready and saves it with its memory.
func (m *Manager) build(ctx context.Context, sh raftfsm.Shape) (err error) {
	key, name := sh.Key(), m.domain(sh.Key())
	if !m.cfg.Images.Has(sh.ImageDigest) {
		return fmt.Errorf("the image %s is not on this node", sh.ImageDigest)
	}
	// Its memory file and what its disk may take while it boots (its
	// image's size as the guest sees it: a boot may write all of it) are
	// held: no build takes the room a VM, a pull or the cluster's log has.
	_, bound := m.cfg.Images.DiskSize(sh.ImageDigest, sh.ImageFormat)
	hold, err := m.cfg.Disk.Reserve("template "+key, sh.MemoryBytes+bound, m.mem.MemoryPath(name))
	if err != nil {
		return err
	}
	defer hold.Release()
	hold.Track(m.diskPath(name))
	start := time.Now()
	m.cfg.Log.Info("building a template", "key", key, "image", sh.ImageDigest, "cpu", sh.CPU, "memoryBytes", sh.MemoryBytes)
	if err := m.cfg.Driver.Delete(ctx, name); err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
		return fmt.Errorf("clear an earlier try: %w", err)
	}
	defer func() {
		if err != nil {
			if derr := m.cfg.Driver.Delete(context.WithoutCancel(ctx), name); derr != nil && !errors.Is(derr, hypervisor.ErrNotFound) {
				m.cfg.Log.Warn("remove a failed template", "key", key, "err", derr)
			}
		}
	}()
	port, err := freePort()
	if err != nil {
		return err
	}
	spec := hypervisor.Spec{
		Name: name, CPU: sh.CPU, MemoryMiB: sh.MemoryBytes >> 20, BaseImage: m.cfg.Images.Path(sh.ImageDigest), BaseFormat: sh.ImageFormat,
		LegacyIO: sh.LegacyIO, GuestOS: sh.OS, ListenAddr: loopback, Forwards: []hypervisor.Forward{{HostPort: port, GuestPort: 22}},
	}
	if err := m.cfg.Driver.Create(ctx, spec); err != nil {
		return fmt.Errorf("boot: %w", err)
	}
	bctx, cancel := context.WithTimeout(ctx, m.cfg.BootTimeout)
	err = m.cfg.GuestReady(bctx, net.JoinHostPort(loopback, strconv.Itoa(port)))
	cancel()
	if err != nil {
		return fmt.Errorf("the guest was not ready within %v: %w", m.cfg.BootTimeout, err)
	}
	mem := m.mem.MemoryPath(name)
	if err := m.mem.SaveMemory(ctx, name, mem); err != nil {
		return fmt.Errorf("save: %w", err)
	}
	e := &entry{Template: raftfsm.Template{Key: key, Shape: sh, ReadyAt: time.Now().UTC().Truncate(time.Second)}}
	for _, p := range []string{mem, m.diskPath(name)} {
		if fi, err := os.Stat(p); err == nil {
			e.SizeBytes += fi.Size()
			if p == mem {
				e.MemoryBytes = fi.Size()
			}
		}
	}
	if e.MemoryBytes == 0 {
		return fmt.Errorf("save: no memory file at %s", mem)
	}
	b, _ := json.Marshal(e)
	if err := os.WriteFile(m.recordPath(key), b, 0o600); err != nil {
		return err
	}
	m.failed.Forget(key)
	m.mu.Lock()
	m.ready[key] = e
	m.mu.Unlock()
	m.metrics.builds.WithLabelValues("ready").Inc()
	m.cfg.Log.Info("template ready", "key", key, "took", time.Since(start).Round(time.Millisecond), "bytes", e.SizeBytes)
	return nil
}

// diskPath is a domain's disk where the driver says ("" if it does not).
func (m *Manager) diskPath(name string) string {
	if d, ok := m.cfg.Driver.(hypervisor.Disks); ok {
		return d.DiskPath(name)
	}
	return ""
}

// remove deletes a template's domain, files and record.
func (m *Manager) remove(ctx context.Context, key string) {
	if err := m.cfg.Driver.Delete(ctx, m.domain(key)); err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
		m.cfg.Log.Warn("remove a template", "key", key, "err", err)
		return
	}
	if err := os.Remove(m.recordPath(key)); err != nil && !errors.Is(err, os.ErrNotExist) {
		m.cfg.Log.Warn("remove a template's record", "key", key, "err", err)
	}
	m.cfg.Log.Info("template removed", "key", key)
}

// load takes up the templates a previous run left: those with a record and
// a memory file of the recorded size; every other template domain of this
// node (a build cut short) is removed.
func (m *Manager) load(ctx context.Context) {
	doms, err := m.cfg.Driver.List(ctx)
	if err != nil {
		m.cfg.Log.Warn("list template domains", "err", err)
	}
	prefix := hypervisor.TemplatePrefix(m.cfg.Name)
	for _, d := range doms {
		key, ok := strings.CutPrefix(d.Name, prefix)
		if !ok {
			continue
		}
		if e, err := m.readRecord(key); err == nil && d.State == hypervisor.StateShutoff {
			m.mu.Lock()
			m.ready[key] = e
			m.mu.Unlock()
			continue
		} else if err != nil {
			m.cfg.Log.Info("dropping a template left unfinished", "key", key, "err", err)
		}
		m.remove(ctx, key)
	}
	// records without a domain
	names, _ := filepath.Glob(filepath.Join(m.cfg.Dir, "*.json"))
	for _, p := range names {
		key := strings.TrimSuffix(filepath.Base(p), ".json")
		m.mu.Lock()
		_, ok := m.ready[key]
		m.mu.Unlock()
		if !ok {
			_ = os.Remove(p)
		}
	}
}

// readRecord reads a template's record and checks its memory file.
func (m *Manager) readRecord(key string) (*entry, error) {
	b, err := os.ReadFile(m.recordPath(key))
	if err != nil {
		return nil, err
	}
	var e entry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, err
	}
	if e.Key != key || e.Shape.Key() != key {
		return nil, fmt.Errorf("the record of %s names another template", key)
	}
	if err := m.checkMemory(&e); err != nil {
		return nil, err
	}
	return &e, nil
}

// checkMemory returns an error unless the template's memory file is there
// at its recorded size.
func (m *Manager) checkMemory(e *entry) error {
	fi, err := os.Stat(m.mem.MemoryPath(m.domain(e.Key)))
	if err != nil {
		return err
	}
	if fi.Size() != e.MemoryBytes {
		return fmt.Errorf("its memory file is %d bytes, %d when saved", fi.Size(), e.MemoryBytes)
	}
	return nil
}

// freePort returns a loopback port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// SSHBanner waits until addr answers with an SSH banner ("SSH-"): the
// guest's SSH server is up, so a VM restored from it answers at once.
func SSHBanner(ctx context.Context, addr string) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		last = banner(ctx, addr)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func banner(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	b := make([]byte, 4)
	if _, err := io.ReadFull(c, b); err != nil {
		return err
	}
	if string(b) != "SSH-" {
		return fmt.Errorf("%s answered %q, not an SSH banner", addr, b)
	}
	return nil
}
