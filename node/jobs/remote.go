package jobs

import (
	"context"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/raftfsm"
)

// remoteResolveJobs bounds the manifests read at once while listing.
const remoteResolveJobs = 8

// RemoteImages lists the tags of the cluster's remote catalogs, read with
// the namespace's registry credentials: one remote image or ISO per tag,
// named as the copy a pull makes by default. A catalog that cannot be read
// fails the listing with the registry's reason.
func (m *Manager) RemoteImages(ctx context.Context, ns string) ([]api.RemoteImage, error) {
	var out []api.RemoteImage
	seen := map[string]bool{}
	for _, repo := range m.cfg.FSM.Catalogs() {
		items, err := m.catalog(ctx, ns, repo)
		if err != nil {
			return nil, fmt.Errorf("remote catalog %s: %w", repo, err)
		}
		for _, it := range items {
			if !seen[it.Type+"/"+it.Name] { // the first catalog names it
				seen[it.Type+"/"+it.Name] = true
				out = append(out, it)
			}
		}
	}
	return out, nil
}

// catalog lists one repository's tags.
func (m *Manager) catalog(ctx context.Context, ns, repo string) ([]api.RemoteImage, error) {
	reg, err := m.registryFor(ctx, ns, repo+":x", false)
	if err != nil {
		return nil, err
	}
	base, err := ocidisk.ParseReference(repo+":x", reg.Insecure, false)
	if err != nil {
		return nil, err
	}
	tags, err := ocidisk.ListTags(ctx, base.Context(), reg)
	if err != nil {
		return nil, err
	}
	items := make([]api.RemoteImage, len(tags))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(remoteResolveJobs)
	for i, tag := range tags {
		g.Go(func() error {
			ref := base.Context().Tag(tag)
			r, err := ocidisk.Resolve(gctx, ref, reg)
			if err != nil {
				return err
			}
			it := api.RemoteImage{Name: imageNameFor(ref), Type: api.RemoteTypeImage, Source: ref.String(), Description: r.Config.Description, Digest: r.Config.Digest}
			if r.ContainerDisk {
				it.Description = "containerDisk"
			} else {
				it.Size = api.FormatSize(r.Config.VirtualSize)
				if r.Config.Kind == ocidisk.KindISO {
					it.Type = api.RemoteTypeISO
				}
			}
			items[i] = it
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return items, nil
}

// findRemote returns the remote image or ISO of a name.
func (m *Manager) findRemote(ctx context.Context, ns, typ, name string) (api.RemoteImage, error) {
	items, err := m.RemoteImages(ctx, ns)
	if err != nil {
		return api.RemoteImage{}, err
	}
	i := slices.IndexFunc(items, func(it api.RemoteImage) bool { return it.Name == name && it.Type == typ })
	if i < 0 {
		return api.RemoteImage{}, fmt.Errorf("remote %s %q is in no remote catalog: %w", typ, name, raftfsm.ErrNotFound)
	}
	return items[i], nil
}

// PullRemote (leader) starts a job that copies a remote image or ISO into
// the namespace as newName (default: its name). It runs on this peer.
func (m *Manager) PullRemote(ctx context.Context, ns, typ, name, newName, owner string) (raftfsm.Job, error) {
	it, err := m.findRemote(ctx, ns, typ, name)
	if err != nil {
		return raftfsm.Job{}, err
	}
	if newName == "" {
		newName = it.Name
	}
	if err := api.ValidateImageName("newName", newName); err != nil {
		return raftfsm.Job{}, err
	}
	kind := raftfsm.KindImage
	existing, taken := m.cfg.FSM.Image(ns, newName)
	if typ == api.RemoteTypeISO {
		kind = raftfsm.KindISO
		existing, taken = m.cfg.FSM.ISO(ns, newName)
	}
	if taken && (existing.SourceType != raftfsm.SourceRemote || raftfsm.SourceRepoTag(existing.Source) != it.Source) {
		return raftfsm.Job{}, fmt.Errorf("%s %q already exists in namespace %q: %w", kind, newName, ns, raftfsm.ErrAlreadyExists)
	}
	if other := m.cfg.FSM.NameTaken(ns, newName); other != "" && other != kind {
		return raftfsm.Job{}, fmt.Errorf("%s %q already exists in namespace %q: %w", other, newName, ns, raftfsm.ErrAlreadyExists)
	}
	return m.CreateJob(ctx, raftfsm.Job{Namespace: ns, Type: raftfsm.JobPull, Reference: it.Source, Image: newName, Kind: kind, Owner: owner})
}

// pullJob carries a pull out: the disk comes into this peer's store, then
// its record (never a record without its disk).
func (m *Manager) pullJob(ctx context.Context, j raftfsm.Job, progress ocidisk.Progress) (string, error) {
	pd, err := m.pullReference(ctx, j.Namespace, j.Reference, "", m.cfg.Arch, progress)
	if err != nil {
		return "", err
	}
	kind := ocidisk.KindImage
	if j.Kind == raftfsm.KindISO {
		kind = ocidisk.KindISO
	}
	if pd.kind != kind {
		pd.release()
		return "", fmt.Errorf("%s is a disk of kind %q, not %q", j.Reference, pd.kind, kind)
	}
	img, err := m.record(ctx, pd, j.Namespace, j.Image, raftfsm.SourceRemote, j.Owner, j.Kind)
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("pulled %s into %s %q (%s)", img.Source, j.Kind, img.Name, img.Digest)
	if r := pd.result; r.ChunksResumed > 0 {
		msg += fmt.Sprintf("; %d of %d chunks written by an earlier, interrupted pull", r.ChunksResumed, r.ChunksResumed+r.ChunksFetched+r.ChunksLocal)
	}
	return msg, nil
}
