package raftfsm

import (
	"slices"
)

// Blob is a content-addressed file (an image disk) and the nodes holding it.
type Blob struct {
	Digest    string   `json:"digest"`
	SizeBytes int64    `json:"sizeBytes"`
	Holders   []string `json:"holders"`
}

func (b *Blob) sortKey() string { return b.Digest }

func (b *Blob) clone() *Blob {
	c := *b
	c.Holders = slices.Clone(b.Holders)
	return &c
}

// BlobAddHolder records that a node now holds a blob.
//
// A blob no record lists yet is recorded when a VM or image references it
// (a VM deployed from a registry reference, whose image name went to other
// content while it was pulled), with SizeBytes.
type BlobAddHolder struct {
	Digest    string `json:"digest"`
	Node      string `json:"node"`
	SizeBytes int64  `json:"sizeBytes,omitempty"`
}

// BlobDropHolder records that a node no longer holds a blob (its garbage
// collection removed it); a blob no node holds is forgotten.
type BlobDropHolder struct {
	Digest string `json:"digest"`
	Node   string `json:"node"`
}

// holdBlob records that node holds a blob (creating its record).
func (s *State) holdBlob(digest string, size int64, node string) {
	b, ok := s.Blobs[digest]
	if !ok {
		b = &Blob{Digest: digest, SizeBytes: size, Holders: []string{}}
		s.Blobs[digest] = b
	}
	if node != "" && !slices.Contains(b.Holders, node) {
		b.Holders = append(b.Holders, node)
		slices.Sort(b.Holders)
	}
}

func (s *State) applyBlobAddHolder(c BlobAddHolder) (any, error) {
	b, ok := s.Blobs[c.Digest]
	if !ok && s.ix().digests[c.Digest] > 0 {
		s.holdBlob(c.Digest, c.SizeBytes, c.Node)
		return nil, nil
	}
	if !ok {
		return nil, ruleErr(ErrNotFound, "blob %s not found", c.Digest)
	}
	if !slices.Contains(b.Holders, c.Node) {
		b.Holders = append(b.Holders, c.Node)
		slices.Sort(b.Holders)
	}
	return nil, nil
}

func (s *State) applyBlobDropHolder(c BlobDropHolder) (any, error) {
	b, ok := s.Blobs[c.Digest]
	if !ok {
		return nil, ruleErr(ErrNotFound, "blob %s not found", c.Digest)
	}
	b.Holders = slices.DeleteFunc(b.Holders, func(h string) bool { return h == c.Node })
	if len(b.Holders) == 0 {
		delete(s.Blobs, c.Digest)
	}
	return nil, nil
}

// blobInUse reports whether an image, an ISO or a VM references digest.
func (s *State) blobInUse(digest string) bool { return s.ix().digests[digest] > 0 }

func blobs(s *State) map[string]*Blob { return s.Blobs }

// Blob returns what the cluster knows of a blob.
func (f *FSM) Blob(digest string) (Blob, bool) { return get(f, blobs, digest) }

// BlobInUse reports whether an image, an ISO or a VM of any namespace
// references the blob: such a blob must stay on the peers that hold it.
func (f *FSM) BlobInUse(digest string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.blobInUse(digest)
}

// BlobsHeldBy returns the blobs the state says node holds.
func (f *FSM) BlobsHeldBy(node string) []Blob {
	return list(f, blobs, func(b *Blob) bool { return slices.Contains(b.Holders, node) })
}
