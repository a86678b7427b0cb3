package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/imagestore/diskcheck"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/node/swarm"
	"github.com/svc-project/svc/raftfsm"
)

// A pull writes a disk from a registry into this peer's blob store and only
// then records it: a pull that is stopped midway leaves no blob and no
// record. What it wrote of an svc disk stays as a partial disk (see
// imagestore.Partial), so that the next pull of that disk on this peer
// fetches only the rest; a containerDisk is pulled whole each time.

// pulled is a disk a pull committed to the blob store, leased until its
// record is in the replicated state.
type pulled struct {
	lease *imagestore.Lease
	// nvram is a Tart image's NVRAM blob (image.NVRAMDigest), leased too.
	nvram  *imagestore.Lease
	image  raftfsm.Image // digest, sizes, format, arch, source; no name
	kind   string        // ocidisk.KindImage or KindISO
	result ocidisk.PullResult
}

// pullReference pulls the disk a reference names (an svc disk, or a
// KubeVirt containerDisk) into the blob store. want, when set, is the digest
// the disk must have.
func (m *Manager) pullReference(ctx context.Context, ns, reference, want, arch string, progress ocidisk.Progress) (*pulled, error) {
	reg, err := m.registryFor(ctx, ns, reference, false)
	if err != nil {
		return nil, err
	}
	ref, err := ocidisk.ParseReference(reference, reg.Insecure, false)
	if err != nil {
		return nil, err
	}
	r, err := ocidisk.Resolve(ctx, ref, reg)
	if err != nil {
		return nil, err
	}
	return m.pullResolved(ctx, ns, r, reg, want, arch, progress)
}

// pullResolved pulls what Resolve found for namespace ns. Every byte of
// the disk is received from the registry, or taken from what ns may
// already read (its images' blobs and chunks, its own earlier pulls, its
// own pulls under way on other peers): the digests a registry's manifest
// claims prove nothing until the whole disk is hashed, so a disk recorded
// from a pull is one ns could have had anyway (raftfsm.ProofReceived).
func (m *Manager) pullResolved(ctx context.Context, ns string, r ocidisk.Resolved, reg ocidisk.Registry, want, arch string, progress ocidisk.Progress) (*pulled, error) {
	start := time.Now()
	hold, err := m.cfg.Disk.Reserve("the pull of "+r.Ref.String(), knownSize(r), "")
	if err != nil {
		return nil, err
	}
	defer hold.Release()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	progress = guarded(progress, hold, stop)
	img := raftfsm.Image{Source: sourceOf(r), Arch: r.Config.Arch, Format: "raw", Description: r.Config.Description, VirtualSize: r.Config.VirtualSize}
	var st *imagestore.Staged
	var res ocidisk.PullResult
	var nvram *imagestore.Lease
	switch {
	case r.Tart != nil:
		st, nvram, err = m.pullTart(ctx, r, reg, progress, &img, hold)
	case r.ContainerDisk:
		st, err = m.pullContainerDisk(ctx, r, reg, arch, progress, &img, hold)
	default:
		st, res, err = m.pullDisk(ctx, ns, r, reg, progress, hold)
	}
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, diskbudget.ErrNoRoom) {
		err = cause // stopped midway: no room for the rest
	}
	handed := false // the leases go to the caller with the result
	defer func() {
		if nvram != nil && !handed {
			nvram.Release()
		}
	}()
	m.metrics.pulledChunks.WithLabelValues("registry").Add(float64(res.ChunksFetched))
	m.metrics.pulledChunks.WithLabelValues("local").Add(float64(res.ChunksLocal))
	m.metrics.pulledChunks.WithLabelValues("resumed").Add(float64(res.ChunksResumed))
	if err != nil {
		return nil, err
	}
	defer st.Discard()
	if r.SVCDisk() && st.Digest != r.Config.Digest {
		return nil, fmt.Errorf("%w: %s is %s, not %s", imagestore.ErrDigestMismatch, r.Ref, st.Digest, r.Config.Digest)
	}
	if want != "" && st.Digest != want {
		return nil, fmt.Errorf("%w: %s is now %s, not %s", imagestore.ErrDigestMismatch, r.Ref, st.Digest, want)
	}
	if err := vetPulled(ctx, r, st, &img); err != nil {
		return nil, err
	}
	lease, err := st.Commit()
	if err != nil {
		return nil, err
	}
	img.Digest, img.SizeBytes = lease.Digest(), st.Size
	if r.SVCDisk() {
		if err := m.cfg.Images.SaveChunks(img.Digest, indexOf(r.Chunks)); err != nil {
			m.cfg.Log.Warn("save the chunk index", "digest", img.Digest, "err", err)
		}
	}
	m.cfg.Log.Info("pulled", "reference", img.Source, "digest", img.Digest, "bytes", st.Size, "took", time.Since(start),
		"chunks_fetched", res.ChunksFetched, "chunks_local", res.ChunksLocal, "chunks_resumed", res.ChunksResumed)
	kind := r.Config.Kind
	if !r.SVCDisk() {
		kind = ocidisk.KindImage
	}
	handed = true
	return &pulled{lease: lease, nvram: nvram, image: img, kind: kind, result: res}, nil
}

// pullDisk pulls an svc disk into this peer's partial disk of it, keeping
// what an earlier, interrupted pull of the same disk wrote, and stages the
// result. A resumed disk that does not match its digest (its host lost
// writes the journal recorded) is pulled again whole, once. While another
// pull of this peer writes the same disk, this one writes a file of its own.
func (m *Manager) pullDisk(ctx context.Context, ns string, r ocidisk.Resolved, reg ocidisk.Registry, progress ocidisk.Progress, hold *diskbudget.Hold) (*imagestore.Staged, ocidisk.PullResult, error) {
	for attempt := 0; ; attempt++ {
		part, err := m.cfg.Images.OpenScopedPartial(ns, r.Config.Digest, r.Config.VirtualSize)
		if errors.Is(err, imagestore.ErrPartialBusy) {
			return m.pullDiskAlone(ctx, ns, r, reg, progress, hold)
		}
		if err != nil {
			return nil, ocidisk.PullResult{}, err
		}
		if attempt == 0 {
			hold.Track(part.File().Name())
		}
		res, err := m.pullInto(ctx, ns, r, reg, part, progress)
		if err != nil {
			part.Close() // kept: the next pull of this disk goes on from here
			return nil, res, err
		}
		st, err := part.Stage(ctx)
		if err != nil {
			return nil, res, err
		}
		if st.Digest == r.Config.Digest || res.ChunksResumed == 0 || attempt > 0 {
			return st, res, nil
		}
		m.cfg.Log.Warn("a resumed pull does not match its digest; pulling it again whole", "reference", r.Ref.String(), "digest", st.Digest, "want", r.Config.Digest)
		st.Discard()
	}
}

// localChunks finds chunks in the blobs of this peer that namespace ns
// may read.
func (m *Manager) localChunks(ns string) *imagestore.ChunkFinder {
	return m.cfg.Images.ChunksIn(func(blob string) bool { return m.cfg.FSM.NamespaceHolds(ns, blob) })
}

// pullInto pulls an svc disk for namespace ns into its partial disk:
// through ns's swarm (the chunks another peer pulling the same disk for ns
// has come from it, and the registry is read about once for all), else
// straight from the registry.
func (m *Manager) pullInto(ctx context.Context, ns string, r ocidisk.Resolved, reg ocidisk.Registry, part *imagestore.Partial, progress ocidisk.Progress) (ocidisk.PullResult, error) {
	plan := swarm.Plan{Digest: r.Config.Digest, Size: r.Config.VirtualSize, Chunks: indexOf(r.Chunks)}
	if m.cfg.Swarm == nil || plan.Validate() != nil {
		return ocidisk.PullInto(ctx, r, reg, part, m.localChunks(ns), progress)
	}
	cr, err := ocidisk.NewChunkReader(ctx, r, reg)
	if err != nil {
		return ocidisk.PullResult{}, err
	}
	var seeds []string
	if b, ok := m.cfg.FSM.Blob(plan.Digest); ok && m.cfg.FSM.NamespaceHolds(ns, plan.Digest) {
		for _, h := range b.Holders {
			if h != m.cfg.Name {
				seeds = append(seeds, h)
			}
		}
	}
	finder := m.localChunks(ns)
	res, err := m.cfg.Swarm.Pull(ctx, ns, plan, part, seeds,
		func(ctx context.Context, c swarm.Chunk, buf []byte) error { return cr.Read(ctx, c.Offset, buf) },
		func(c swarm.Chunk, buf []byte) bool { return finder.ReadChunk(c.Digest, buf) },
		progress)
	m.metrics.pulledChunks.WithLabelValues("peer").Add(float64(res.FromPeers))
	out := ocidisk.PullResult{ChunksFetched: res.FromOrigin, ChunksLocal: res.Local, ChunksResumed: res.Resumed, BytesFetched: cr.BytesFetched()}
	if err != nil {
		return out, fmt.Errorf("pull %s: %w", r.Ref, err)
	}
	if err := part.File().Sync(); err != nil {
		return out, fmt.Errorf("pull: %w", err)
	}
	return out, nil
}

// pullDiskAlone pulls an svc disk for namespace ns into a staging file of
// its own.
func (m *Manager) pullDiskAlone(ctx context.Context, ns string, r ocidisk.Resolved, reg ocidisk.Registry, progress ocidisk.Progress, hold *diskbudget.Hold) (*imagestore.Staged, ocidisk.PullResult, error) {
	tmp, err := m.cfg.Images.TempPath("pull")
	if err != nil {
		return nil, ocidisk.PullResult{}, err
	}
	hold.Track(tmp)
	res, err := ocidisk.Pull(ctx, r, reg, tmp, m.localChunks(ns), progress)
	if err != nil {
		_ = os.Remove(tmp)
		return nil, res, err
	}
	st, err := m.cfg.Images.StageFile(ctx, tmp)
	return st, res, err
}

// pullContainerDisk pulls a KubeVirt containerDisk into a staging file;
// its arch is the one asked for.
func (m *Manager) pullContainerDisk(ctx context.Context, r ocidisk.Resolved, reg ocidisk.Registry, arch string, progress ocidisk.Progress, img *raftfsm.Image, hold *diskbudget.Hold) (*imagestore.Staged, error) {
	tmp, err := m.cfg.Images.TempPath("pull")
	if err != nil {
		return nil, err
	}
	hold.Track(tmp)
	if _, err := ocidisk.PullContainerDisk(ctx, r.Ref, reg, arch, tmp, progress); err != nil {
		_ = os.Remove(tmp)
		return nil, err
	}
	img.Arch = arch
	return m.cfg.Images.StageFile(ctx, tmp)
}

// vetPulled checks a pulled disk before it is kept, as an upload is
// checked: an svc disk is raw, a containerDisk's file qcow2 or raw (its
// format and virtual size are then what it is), an ISO an ISO.
func vetPulled(ctx context.Context, r ocidisk.Resolved, st *imagestore.Staged, img *raftfsm.Image) error {
	if r.Config.Kind == ocidisk.KindISO && r.SVCDisk() {
		if _, err := diskcheck.ISO(st.Path()); err != nil {
			return fmt.Errorf("%s: %w", r.Ref, err)
		}
		return nil
	}
	format := diskcheck.FormatRaw
	if r.ContainerDisk {
		format = ""
	}
	info, err := diskcheck.Disk(ctx, st.Path(), format)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Ref, err)
	}
	img.Format, img.VirtualSize = info.Format, info.VirtualSize
	return nil
}

// knownSize is what a pull of r writes, where the image says (an svc
// disk's chunks, a Tart disk's size; 0 for a containerDisk, which says
// only as it is read).
func knownSize(r ocidisk.Resolved) int64 {
	switch {
	case r.Tart != nil:
		return r.Tart.DiskSize
	case r.ContainerDisk:
		return 0
	}
	var n int64
	for _, c := range r.Chunks {
		n += c.Size
	}
	return n
}

// guarded passes a pull's progress on to p, and grows hold as the bytes
// written pass it: past the disk's room the pull is stopped, its cause the
// budget's refusal.
func guarded(p ocidisk.Progress, hold *diskbudget.Hold, stop context.CancelCauseFunc) ocidisk.Progress {
	return func(done, total int64) {
		if err := hold.Wrote(done); err != nil {
			stop(err)
		}
		if p != nil {
			p(done, total)
		}
	}
}

func indexOf(cs []ocidisk.Chunk) []imagestore.IndexedChunk {
	out := make([]imagestore.IndexedChunk, len(cs))
	for i, c := range cs {
		out[i] = imagestore.IndexedChunk{Offset: c.Offset, Size: c.Size, Digest: c.Digest}
	}
	return out
}

// record names a pulled disk in a namespace (or gives the holder to the
// image that already has it) and ends its lease.
func (m *Manager) record(ctx context.Context, pd *pulled, ns, name, sourceType, owner, kind string) (raftfsm.Image, error) {
	img := pd.image
	img.Name, img.Namespace, img.SourceType, img.Owner = name, ns, sourceType, owner
	img.CreatedAt = time.Now().UTC().Truncate(time.Second)
	if kind == raftfsm.KindISO {
		img.Arch, img.Format = "", ""
	}
	var rec raftfsm.Image
	err := pd.lease.Record(ctx, m.cfg.FSM.BlobInUse, func(ctx context.Context) (err error) {
		rec, err = m.createImage(ctx, raftfsm.ImageCreate{Kind: kind, Image: img, Holder: m.cfg.Name, FromRegistry: true, Proof: raftfsm.ProofReceived})
		return err
	})
	if pd.nvram == nil {
		return rec, err
	}
	if err != nil {
		pd.nvram.Release()
		return rec, err
	}
	// the image refers to the NVRAM now: this peer holds it
	return rec, pd.nvram.Record(ctx, m.cfg.FSM.BlobInUse, func(ctx context.Context) error {
		_, err := m.cfg.Proposer.Apply(ctx, raftfsm.TypeBlobAddHolder, raftfsm.BlobAddHolder{Digest: img.NVRAMDigest, SizeBytes: sizeOf(m.cfg.Images.Path(img.NVRAMDigest)), Node: m.cfg.Name})
		return err
	})
}

func sizeOf(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// release ends the leases of a pull that is not recorded.
func (pd *pulled) release() {
	pd.lease.Release()
	if pd.nvram != nil {
		pd.nvram.Release()
	}
}

// pullTart pulls a Tart image: its disk staged, its NVRAM committed to the
// blob store (and leased), its guest facts in img.
func (m *Manager) pullTart(ctx context.Context, r ocidisk.Resolved, reg ocidisk.Registry, progress ocidisk.Progress, img *raftfsm.Image, hold *diskbudget.Hold) (*imagestore.Staged, *imagestore.Lease, error) {
	disk, err := m.cfg.Images.TempPath("pull")
	if err != nil {
		return nil, nil, err
	}
	nv, err := m.cfg.Images.TempPath("nvram")
	if err != nil {
		return nil, nil, err
	}
	hold.Track(disk)
	hold.Track(nv)
	if err := ocidisk.PullTart(ctx, r, reg, disk, nv, progress); err != nil {
		return nil, nil, err
	}
	nst, err := m.cfg.Images.StageFile(ctx, nv)
	if err != nil {
		_ = os.Remove(disk)
		return nil, nil, err
	}
	nvram, err := nst.Commit()
	if err != nil {
		_ = os.Remove(disk)
		return nil, nil, err
	}
	st, err := m.cfg.Images.StageFile(ctx, disk)
	if err != nil {
		nvram.Release()
		return nil, nil, err
	}
	c := r.Tart.Config
	img.Arch, img.NVRAMDigest, img.HardwareModel = c.Arch, nvram.Digest(), c.HardwareModel
	if c.OS == "darwin" {
		img.OS = raftfsm.OSMacOS
	}
	return st, nvram, nil
}

// createAttempts bounds the sends of an image's record whose fate is
// unknown (leadership changed while it was in flight).
const createAttempts = 5

// createImage records an image and returns the record (as the FSM made it
// when this peer leads; as proposed otherwise, the answer of a forwarded
// proposal carrying no value). A record whose fate is unknown (the leader
// lost its leadership while committing it, a timeout) is sent again, at
// most createAttempts times: a pull's record names its source, so applied
// twice it only gains its holder again.
func (m *Manager) createImage(ctx context.Context, c raftfsm.ImageCreate) (raftfsm.Image, error) {
	var v any
	var err error
	for attempt := range createAttempts {
		v, err = m.cfg.Proposer.Apply(ctx, raftfsm.TypeImageCreate, c)
		if err == nil || !c.FromRegistry || !errors.Is(err, raftfsm.ErrNotLeader) && !errors.Is(err, raftfsm.ErrTimeout) {
			break
		}
		m.cfg.Log.Warn("recording the image: its fate is unknown; sending it again", "image", c.Image.Name, "attempt", attempt+1, "err", err)
		select {
		case <-ctx.Done():
			return raftfsm.Image{}, err
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
	if err != nil {
		return raftfsm.Image{}, err
	}
	if img, ok := v.(*raftfsm.Image); ok {
		return *img, nil
	}
	return c.Image, nil
}

// sourceOf is the source an image pulled from r records: the reference as
// given, pinned to the manifest it resolved to.
func sourceOf(r ocidisk.Resolved) string {
	s := r.Ref.String()
	if _, ok := r.Ref.(name.Digest); ok {
		return s
	}
	return s + "@" + r.ManifestDigest
}

var nonName = regexp.MustCompile(`[^a-z0-9._-]+`)

// imageNameFor derives an image name from a reference: the last path
// element and the tag ("ubuntu-22.04" for "reg.example/os/ubuntu:22.04").
func imageNameFor(ref name.Reference) string {
	repoTag, dig, pinned := strings.Cut(ref.String(), "@")
	last := path.Base(repoTag)
	base, id, tagged := strings.Cut(last, ":")
	if !tagged && pinned {
		id = strings.TrimPrefix(dig, "sha256:")[:min(12, len(strings.TrimPrefix(dig, "sha256:")))]
	}
	n := strings.Trim(nonName.ReplaceAllString(strings.ToLower(base+"-"+id), "-"), "-._")
	if len(n) > 100 {
		n = strings.Trim(n[:100], "-._")
	}
	if n == "" {
		n = "image"
	}
	return n
}

// ResolveImage (leader) turns the registry reference of a deploy into the
// image the VM starts from. An svc disk is not pulled here: the image comes
// back unrecorded, and the VM's host pulls it (or fetches it from a peer
// that holds it) and records it. A containerDisk has no digest until it is
// pulled: the leader pulls and records it first.
func (m *Manager) ResolveImage(ctx context.Context, ns, reference, owner string) (raftfsm.Image, error) {
	reg, err := m.registryFor(ctx, ns, reference, false)
	if err != nil {
		return raftfsm.Image{}, err
	}
	ref, err := ocidisk.ParseReference(reference, reg.Insecure, false)
	if err != nil {
		return raftfsm.Image{}, err
	}
	r, err := ocidisk.Resolve(ctx, ref, reg)
	if err != nil {
		return raftfsm.Image{}, err
	}
	source := sourceOf(r)
	name := m.nameForPull(ns, ref, source)
	if img, ok := m.cfg.FSM.Image(ns, name); ok && img.Source == source && img.Usable() {
		return img, nil // pulled before: a peer holds it
	}
	if r.SVCDisk() {
		img := raftfsm.Image{
			Name: name, Namespace: ns, Digest: r.Config.Digest, SizeBytes: r.Config.VirtualSize, VirtualSize: r.Config.VirtualSize,
			Format: "raw", Arch: r.Config.Arch, Description: r.Config.Description, SourceType: raftfsm.SourceRegistry, Source: source, Owner: owner,
			CreatedAt: time.Now().UTC().Truncate(time.Second),
		}
		b, ok := m.cfg.FSM.Blob(img.Digest)
		if !ok || len(b.Holders) == 0 || !m.cfg.FSM.NamespaceHolds(ns, img.Digest) {
			// The VM's host pulls it: a digest the registry claims is
			// taken from the cluster only where ns may read it already.
			return img, nil
		}
		// ns has this content already: the host fetches it from a peer.
		img.SizeBytes = b.SizeBytes
		return m.createImage(ctx, raftfsm.ImageCreate{Image: img, FromRegistry: true, Proof: raftfsm.ProofNamespace})
	}
	pd, err := m.pullResolved(ctx, ns, r, reg, "", m.cfg.Arch, nil)
	if err != nil {
		return raftfsm.Image{}, err
	}
	return m.record(ctx, pd, ns, name, raftfsm.SourceRegistry, owner, raftfsm.KindImage)
}

// nameForPull is the image name a reference is recorded under in a
// namespace: imageNameFor, unless that name holds an image of another
// origin or an ISO, then with a hash of the reference's repository and tag
// appended.
func (m *Manager) nameForPull(ns string, ref name.Reference, source string) string {
	n := imageNameFor(ref)
	img, ok := m.cfg.FSM.Image(ns, n)
	if !ok && m.cfg.FSM.NameTaken(ns, n) == "" || ok && img.SourceType == raftfsm.SourceRegistry && raftfsm.SourceRepoTag(img.Source) == raftfsm.SourceRepoTag(source) {
		return n
	}
	sum := sha256.Sum256([]byte(raftfsm.SourceRepoTag(source)))
	return n + "-" + hex.EncodeToString(sum[:4])
}

// PullVMImage pulls the disk of a VM deployed from a registry reference
// (vm.ImageSource), which must have digest, and records it as the
// namespace's image vm.Image; when that name went to other content
// meanwhile, the VM keeps its own and only this peer's hold on the blob is
// recorded.
func (m *Manager) PullVMImage(ctx context.Context, vm raftfsm.VM, digest string) error {
	pd, err := m.pullReference(ctx, vm.Namespace, vm.ImageSource, digest, vm.Arch, nil)
	if errors.Is(err, diskcheck.ErrRefused) || errors.Is(err, imagestore.ErrDigestMismatch) || errors.Is(err, diskbudget.ErrNoRoom) {
		// the registry's disk is at fault, or this host is full
		return fmt.Errorf("pull %s: %w", vm.ImageSource, err)
	}
	if err != nil {
		if re, ok := ocidisk.AsRegistryError(vm.ImageSource, err); ok {
			return re // the registry's failure, in its words (a refusal is the caller's 400)
		}
		return fmt.Errorf("pull %s: %s", vm.ImageSource, ocidisk.Reason(err))
	}
	if _, err := m.record(ctx, pd, vm.Namespace, vm.Image, raftfsm.SourceRegistry, vm.Owner, raftfsm.KindImage); err != nil {
		m.cfg.Log.Warn("record the pulled image", "image", vm.Image, "err", err)
		if _, err := m.cfg.Proposer.Apply(ctx, raftfsm.TypeBlobAddHolder, raftfsm.BlobAddHolder{Digest: digest, Node: m.cfg.Name, SizeBytes: pd.image.SizeBytes}); err != nil {
			m.cfg.Log.Warn("record blob holder", "digest", digest, "err", err)
		}
	}
	return nil
}
