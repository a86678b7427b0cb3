package libvirt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/svc-project/svc/hypervisor"
)

// The lifecycle of a libvirt domain: create (with its overlay), start,
// stop, suspend, resume, revert, delete and export.

// Create defines the domain (keeping an existing overlay, making one where
// there is none) and starts it. A start that fails because the overlay
// went away meanwhile (removed behind the peer's back) is made again on a
// fresh overlay, once.
func (d *Driver) Create(ctx context.Context, s hypervisor.Spec) error {
	if err := d.checkName(s.Name); err != nil {
		return err
	}
	if s.GuestOS != "" && s.GuestOS != "linux" {
		return fmt.Errorf("%s: a %s guest runs on a vz node (a Mac), not under libvirt: %w", s.Name, s.GuestOS, hypervisor.ErrUnsupported)
	}
	err := d.create(ctx, s)
	if err != nil && d.diskMissing(s.Name) {
		d.cfg.Log.Warn("the domain's disk went away while it was created; making a fresh one", "domain", s.Name, "err", err)
		err = d.create(ctx, s)
	}
	return err
}

// diskMissing reports whether a domain's overlay is not there.
func (d *Driver) diskMissing(name string) bool {
	_, err := os.Stat(d.DiskPath(name))
	return errors.Is(err, os.ErrNotExist)
}

func (d *Driver) create(ctx context.Context, s hypervisor.Spec) error {
	disk := d.DiskPath(s.Name)
	if d.diskMissing(s.Name) {
		if err := createOverlay(ctx, s.BaseImage, s.BaseFormat, disk); err != nil {
			return err
		}
	}
	secret, err := d.writeVNCSecret(s)
	if err != nil {
		return err
	}
	x, err := domainXML(d.cfg.DomainType, s, domainFiles{disk: disk, console: d.consolePath(s.Name), vncSecret: secret, label: d.user.label()})
	if err != nil {
		return err
	}
	// A stopped domain of that name is redefined from the spec (its ports may
	// have changed); a running one is left as it is.
	if old, err := d.lookup(ctx, s.Name); err == nil {
		st, err := d.state(ctx, old)
		if err != nil {
			return err
		}
		if st == hypervisor.StateRunning || st == hypervisor.StatePaused {
			return nil
		}
		if err := d.undefine(ctx, old); err != nil {
			return err
		}
	} else if !errors.Is(err, hypervisor.ErrNotFound) {
		return err
	}
	dom, err := do(ctx, d, "define "+s.Name, func(l *golibvirt.Libvirt) (golibvirt.Domain, error) { return l.DomainDefineXML(x) })
	if err != nil {
		return err
	}
	return d.start(ctx, dom)
}

func (d *Driver) start(ctx context.Context, dom golibvirt.Domain) error {
	st, err := d.state(ctx, dom)
	if err != nil {
		return err
	}
	switch st {
	case hypervisor.StateRunning:
		return nil
	case hypervisor.StatePaused:
		_, err := do(ctx, d, "resume "+dom.Name, func(l *golibvirt.Libvirt) (struct{}, error) { return struct{}{}, l.DomainResume(dom) })
		return err
	}
	_, err = do(ctx, d, "start "+dom.Name, func(l *golibvirt.Libvirt) (struct{}, error) { return struct{}{}, l.DomainCreate(dom) })
	return err
}

// Start boots a stopped domain (or resumes a paused one); a domain whose
// disk is gone is ErrDiskMissing (Create makes it again).
func (d *Driver) Start(ctx context.Context, name string) error {
	dom, err := d.lookup(ctx, name)
	if err != nil {
		return err
	}
	if st, err := d.state(ctx, dom); err == nil && st == hypervisor.StateShutoff && d.diskMissing(name) {
		return fmt.Errorf("start %s: %w", name, hypervisor.ErrDiskMissing)
	}
	return d.start(ctx, dom)
}

// shutdownFlags ask the guest to shut down through its agent where it has
// one (libvirt tries it first), else with the ACPI power button.
const shutdownFlags = golibvirt.DomainShutdownGuestAgent | golibvirt.DomainShutdownAcpiPowerBtn

// Stop asks the guest to shut down (through its agent, else over ACPI)
// and forces it off after grace, saying so in the log.
func (d *Driver) Stop(ctx context.Context, name string, grace time.Duration) error {
	dom, err := d.lookup(ctx, name)
	if err != nil {
		return err
	}
	st, err := d.state(ctx, dom)
	if err != nil || st == hypervisor.StateShutoff {
		return err
	}
	if st == hypervisor.StateRunning {
		if _, err := do(ctx, d, "shut down "+name, func(l *golibvirt.Libvirt) (struct{}, error) {
			return struct{}{}, l.DomainShutdownFlags(dom, shutdownFlags)
		}); err == nil {
			deadline := time.Now().Add(grace)
			for time.Now().Before(deadline) {
				if st, err := d.state(ctx, dom); err == nil && st == hypervisor.StateShutoff {
					return nil
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("stop %s: %w", name, ctx.Err())
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
		frozen := d.freezeBeforeForce(ctx, name)
		d.cfg.Log.Warn("the guest did not shut down in time; forcing it off", "domain", name, "grace", grace, "frozenFileSystems", frozen)
	}
	return d.destroy(ctx, dom)
}

// freezeBeforeForce asks the agent of a guest about to be forced off to
// flush and freeze its file systems first, so that its disk is whole;
// it returns how many it froze (-1: no agent answered).
func (d *Driver) freezeBeforeForce(ctx context.Context, name string) int {
	fctx, cancel := context.WithTimeout(ctx, agentTimeout*time.Second)
	defer cancel()
	n, err := d.FreezeFS(fctx, name)
	if err != nil {
		return -1
	}
	return n
}

func (d *Driver) destroy(ctx context.Context, dom golibvirt.Domain) error {
	st, err := d.state(ctx, dom)
	if err != nil || st == hypervisor.StateShutoff {
		return err
	}
	_, err = do(ctx, d, "force off "+dom.Name, func(l *golibvirt.Libvirt) (struct{}, error) { return struct{}{}, l.DomainDestroy(dom) })
	return err
}

// Suspend pauses a running domain.
func (d *Driver) Suspend(ctx context.Context, name string) error {
	dom, err := d.lookup(ctx, name)
	if err != nil {
		return err
	}
	if st, err := d.state(ctx, dom); err != nil || st == hypervisor.StatePaused {
		return err
	}
	_, err = do(ctx, d, "suspend "+name, func(l *golibvirt.Libvirt) (struct{}, error) { return struct{}{}, l.DomainSuspend(dom) })
	return err
}

// Resume continues a paused domain.
func (d *Driver) Resume(ctx context.Context, name string) error {
	dom, err := d.lookup(ctx, name)
	if err != nil {
		return err
	}
	if st, err := d.state(ctx, dom); err != nil || st != hypervisor.StatePaused {
		return err
	}
	_, err = do(ctx, d, "resume "+name, func(l *golibvirt.Libvirt) (struct{}, error) { return struct{}{}, l.DomainResume(dom) })
	return err
}

// Revert throws the VM's changes away: a fresh overlay, then a fresh boot.
func (d *Driver) Revert(ctx context.Context, s hypervisor.Spec) error {
	if dom, err := d.lookup(ctx, s.Name); err == nil {
		if err := d.destroy(ctx, dom); err != nil {
			return err
		}
	} else if !errors.Is(err, hypervisor.ErrNotFound) {
		return err
	}
	disk := d.DiskPath(s.Name)
	if err := os.Remove(disk); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("revert %s: %w", s.Name, err)
	}
	return d.Create(ctx, s)
}

// Delete forces the domain off, undefines it and removes its files.
func (d *Driver) Delete(ctx context.Context, name string) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	d.mu.Lock()
	d.deleting[name] = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.deleting, name)
		d.mu.Unlock()
	}()
	dom, err := d.lookup(ctx, name)
	switch {
	case err == nil:
		if err := d.destroy(ctx, dom); err != nil {
			return err
		}
		if err := d.undefine(ctx, dom); err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
			return err
		}
	case !errors.Is(err, hypervisor.ErrNotFound):
		return err
	}
	for _, p := range []string{d.DiskPath(name), d.consolePath(name), d.vncSecretPath(name), d.MemoryPath(name), d.forwardsFile(name)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("delete %s: %w", name, err)
		}
	}
	return nil
}

// Export writes the shut-off domain's disk flattened to dst.
func (d *Driver) Export(ctx context.Context, name, dst string) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	dom, err := d.lookup(ctx, name)
	if err != nil {
		return err
	}
	if st, err := d.state(ctx, dom); err != nil {
		return err
	} else if st != hypervisor.StateShutoff {
		return fmt.Errorf("export %s: the domain is %s, not shut off", name, st)
	}
	return exportDisk(ctx, d.DiskPath(name), dst)
}

func (d *Driver) undefine(ctx context.Context, dom golibvirt.Domain) error {
	_, err := do(ctx, d, "undefine "+dom.Name, func(l *golibvirt.Libvirt) (struct{}, error) {
		return struct{}{}, l.DomainUndefineFlags(dom, golibvirt.DomainUndefineManagedSave|golibvirt.DomainUndefineSnapshotsMetadata|golibvirt.DomainUndefineNvram)
	})
	return err
}
