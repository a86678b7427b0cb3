package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// Cache jobs copy an image to chosen nodes before VMs need it there: each
// target node fetches the image's blobs for itself (from a peer that holds
// them, else the image's registry) and reports its own progress; the job
// adds the targets up (raftfsm.JobTarget). A blob counts as held only once
// it is whole and checked, so a copy cut short lists nothing.

// Blobs gets this peer a blob (from a peer that holds it, or the image's
// registry) and records that it holds it.
type Blobs interface {
	EnsureBlob(ctx context.Context, vm raftfsm.VM, digest string) error
	// BlobReceived is how many bytes of a blob the fetch under way has
	// received.
	BlobReceived(digest string) int64
}

// cacheReportEvery spaces a copy's progress reports.
const cacheReportEvery = time.Second

// myTarget returns this peer's part of a cache job.
func (m *Manager) myTarget(j raftfsm.Job) (raftfsm.JobTarget, bool) {
	for _, t := range j.Targets {
		if t.Node == m.cfg.Name {
			return t, true
		}
	}
	return raftfsm.JobTarget{}, false
}

// cache carries out this peer's part of a cache job.
func (m *Manager) cache(ctx context.Context, j raftfsm.Job, rep *jobReporter) (string, error) {
	if m.cfg.Blobs == nil {
		return "", fmt.Errorf("this peer cannot fetch blobs")
	}
	img, ok := m.cfg.FSM.Image(j.Namespace, j.Image)
	if !ok || !img.Usable() {
		return "", fmt.Errorf("image %q is gone or has no content", j.Image)
	}
	vm := raftfsm.VM{
		Namespace: j.Namespace, Name: "cache", Image: img.Name, ImageDigest: img.Digest, ImageFormat: img.Format,
		NVRAMDigest: img.NVRAMDigest, OS: img.OS, Arch: img.Arch, Owner: j.Owner,
	}
	if img.SourceType == raftfsm.SourceRegistry || img.SourceType == raftfsm.SourceRemote {
		vm.ImageSource = img.Source
	}
	digests := []string{img.Digest}
	if img.NVRAMDigest != "" {
		digests = append(digests, img.NVRAMDigest)
	}
	var total, had int64
	for _, d := range digests {
		b, _ := m.cfg.FSM.Blob(d)
		total += b.SizeBytes
		if m.cfg.Images.Has(d) {
			had += b.SizeBytes
		}
	}
	rep.total = total
	var done int64
	for _, d := range digests {
		size := int64(0)
		if b, ok := m.cfg.FSM.Blob(d); ok {
			size = b.SizeBytes
		}
		errc := make(chan error, 1)
		go func() { errc <- m.cfg.Blobs.EnsureBlob(ctx, vm, d) }()
		tick := time.NewTicker(cacheReportEvery)
		var err error
	wait:
		for {
			select {
			case err = <-errc:
				break wait
			case <-tick.C:
				rep.done = done + m.cfg.Blobs.BlobReceived(d)
				rep.send(ctx, true)
			}
		}
		tick.Stop()
		if err != nil {
			return "", err
		}
		done += size
		rep.done = done
	}
	if had == total {
		return fmt.Sprintf("%s held already", api.FormatSize(total)), nil
	}
	return fmt.Sprintf("%s copied", api.FormatSize(total-had)), nil
}

// failLostTargets (leader) fails the unended targets of a cache job whose
// node is NOT READY or gone.
func (m *Manager) failLostTargets(ctx context.Context, j raftfsm.Job, now time.Time) error {
	var errs []error
	for _, t := range j.Targets {
		if t.Ended() {
			continue
		}
		lost, gone := m.lostNode(t.Node)
		if !lost {
			continue
		}
		why := fmt.Sprintf("node %s went NOT READY during the copy; nothing of it is listed", t.Node)
		if gone {
			why = fmt.Sprintf("node %s left the cluster during the copy", t.Node)
		}
		errs = append(errs, m.failPart(ctx, j, t.Node, t.BytesDone, t.BytesTotal, why, now))
	}
	return errors.Join(errs...)
}
