package raftfsm

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
)

// Kinds of disk artifacts: the image and ISO commands serve both.
const (
	KindImage = "image"
	KindISO   = "iso"
)

// Source types of images pulled from registries: straight from a reference
// (deploy, pull of a reference) and from a remote catalog.
const (
	SourceRegistry = "registry"
	SourceRemote   = "remote"
)

// SourceRepoTag returns the "<repo>:<tag>" part of a registry source.
func SourceRepoTag(source string) string {
	rt, _, _ := strings.Cut(source, "@")
	return rt
}

// MaxDescription bounds an image's or ISO's description.
const MaxDescription = 4096

// Image states: Updating while a commit or save writes its new content.
const (
	ImageReady    = "Ready"
	ImageUpdating = "Updating"
	ImageFailed   = "Failed"
)

// Image is a disk image (or an ISO) of a namespace: a name bound to a
// content digest; which nodes hold the blob is the Blob record's.
type Image struct {
	Name        string `json:"name"`
	Namespace   string `json:"namespace"`
	Digest      string `json:"digest"`
	SizeBytes   int64  `json:"sizeBytes"`
	VirtualSize int64  `json:"virtualSize"`
	Format      string `json:"format"`
	Arch        string `json:"arch"`
	// OS is the guest's operating system: "" (Linux) or "darwin" (macOS,
	// which runs on arm64 vz nodes only).
	OS string `json:"os,omitempty"`
	// NVRAMDigest is the blob of a macOS image's NVRAM (auxiliary
	// storage) and HardwareModel its Mac platform (base64), as a Tart
	// image carries them.
	NVRAMDigest   string    `json:"nvramDigest,omitempty"`
	HardwareModel string    `json:"hardwareModel,omitempty"`
	Description   string    `json:"description,omitempty"`
	SourceType    string    `json:"sourceType"`
	Source        string    `json:"source,omitempty"`
	Owner         string    `json:"owner,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	// State is "" (Ready: records from before states), ImageReady,
	// ImageUpdating or ImageFailed; ErrorMessage says why the last commit or
	// save failed (the content before it is intact).
	State        string `json:"state,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// Guest operating systems of images (Image.OS).
const (
	OSLinux = ""
	OSMacOS = "darwin"
)

// maxHardwareModel bounds an image's Mac hardware model (base64 of a
// platform description of a few hundred bytes).
const maxHardwareModel = 4096

// validGuest refuses guest facts no node could run.
func (img *Image) validGuest() error {
	switch {
	case img.OS != OSLinux && img.OS != OSMacOS:
		return ruleErr(ErrInvalid, "guest OS %q: an image is Linux (\"\") or macOS (%q)", img.OS, OSMacOS)
	case len(img.HardwareModel) > maxHardwareModel:
		return ruleErr(ErrInvalid, "a hardware model of %d bytes is over %d", len(img.HardwareModel), maxHardwareModel)
	case img.NVRAMDigest != "" && !validDigest(img.NVRAMDigest):
		return ruleErr(ErrInvalid, "NVRAM digest %q is not sha256:<64 hex>", img.NVRAMDigest)
	}
	return nil
}

// Usable reports whether a VM can start from the image: it has content.
func (img *Image) Usable() bool { return img.Digest != "" }

func (img *Image) sortKey() string { return key(img.Namespace, img.Name) }

func (img *Image) clone() *Image { c := *img; return &c }

// ImageCreate records an image (or, with Kind KindISO, an ISO) whose blob
// one node holds.
//
// With FromRegistry, an image pulled from a registry (SourceType
// SourceRegistry, Source "<repo>:<tag>@<manifest digest>") may take the
// place of one of the same name pulled from the same <repo>:<tag> before
// (the tag moved); one that already has this content only gains the holder.
//
// Proof says why the namespace may have the blob: a digest names bytes,
// never a right to them (see Proof's values).
type ImageCreate struct {
	Kind         string `json:"kind,omitempty"` // "" is an image
	Image        Image  `json:"image"`
	Holder       string `json:"holder"`
	FromRegistry bool   `json:"fromRegistry,omitempty"`
	Proof        string `json:"proof,omitempty"`
}

// Why a new record may point at a blob (ImageCreate.Proof).
const (
	// ProofReceived: Holder received the bytes in this operation (an
	// upload, a pull from a registry, a generated disk) and hashed them
	// to the digest, taking nothing from blobs its namespace may not read.
	ProofReceived = "received"
	// ProofNamespace: nothing was received; the namespace already has an
	// image or ISO of this content (and of its NVRAM), which Apply checks.
	ProofNamespace = "namespace"
)

// checkProof checks an ImageCreate's Proof against the state. An empty
// Proof is a command written before proofs existed, replayed as it was
// applied then; no peer proposes one any more (CheckProposer refuses it,
// and the leader's own code always gives one).
func (s *State) checkProof(c ImageCreate) error {
	switch c.Proof {
	case "":
		return nil
	case ProofReceived:
		if c.Holder == "" {
			return ruleErr(ErrInvalid, "a received %s names the node that received it", c.Image.Digest)
		}
		return nil
	case ProofNamespace:
		for _, d := range []string{c.Image.Digest, c.Image.NVRAMDigest} {
			if d != "" && !s.ix().holds(c.Image.Namespace, d) {
				return ruleErr(ErrInvalid, "content %s is not readable in namespace %q: its bytes must be received (pulled or uploaded), not named by digest", d, c.Image.Namespace)
			}
		}
		return nil
	}
	return ruleErr(ErrInvalid, "unknown proof %q", c.Proof)
}

// ImageCopy gives an image's (or ISO's) content a second name. The copy
// keeps the description unless one is given.
type ImageCopy struct {
	Kind        string    `json:"kind,omitempty"`
	Namespace   string    `json:"namespace"`
	Name        string    `json:"name"`
	NewName     string    `json:"newName"`
	Description *string   `json:"description,omitempty"`
	Owner       string    `json:"owner,omitempty"`
	Time        time.Time `json:"time"`
}

// ImageDescribe sets an image's (or ISO's) description.
type ImageDescribe struct {
	Kind        string `json:"kind,omitempty"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// ImageDelete removes an image's (or ISO's) name; its blob goes when nothing
// references it.
type ImageDelete struct {
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// artifacts returns the map and the word for a kind.
func (s *State) artifacts(kind string) (map[string]*Image, string, error) {
	switch kind {
	case "", KindImage:
		return s.Images, KindImage, nil
	case KindISO:
		return s.ISOs, KindISO, nil
	}
	return nil, "", ruleErr(ErrInvalid, "unknown kind %q", kind)
}

func (s *State) artifact(kind, ns, name string) (*Image, map[string]*Image, string, error) {
	m, word, err := s.artifacts(kind)
	if err != nil {
		return nil, nil, "", err
	}
	img, ok := m[key(ns, name)]
	if !ok {
		return nil, m, word, ruleErr(ErrNotFound, "%s %q not found in namespace %q", word, name, ns)
	}
	return img, m, word, nil
}

// nameTaken returns the kind of the image or ISO of a namespace that has a
// name ("" for none): images and ISOs share one set of names, so that a
// name always means one thing.
func (s *State) nameTaken(ns, name string) string {
	if _, ok := s.Images[key(ns, name)]; ok {
		return KindImage
	}
	if _, ok := s.ISOs[key(ns, name)]; ok {
		return KindISO
	}
	return ""
}

// addArtifact records a new image or ISO under its name.
func (s *State) addArtifact(m map[string]*Image, word string, img *Image) error {
	if err := api.ValidateImageName(word+" name", img.Name); err != nil {
		return ruleErr(ErrInvalid, "%s", err.Error())
	}
	if len(img.Description) > MaxDescription {
		return ruleErr(ErrInvalid, "description is over %d bytes", MaxDescription)
	}
	if err := img.validGuest(); err != nil {
		return err
	}
	if _, ok := s.Namespaces[img.Namespace]; !ok {
		return ruleErr(ErrNotFound, "namespace %q not found", img.Namespace)
	}
	k := key(img.Namespace, img.Name)
	if taken := s.nameTaken(img.Namespace, img.Name); taken != "" {
		return ruleErr(ErrAlreadyExists, "%s %q already exists in namespace %q", taken, img.Name, img.Namespace)
	}
	m[k] = img
	s.ix().addImage(img)
	return nil
}

func (s *State) applyImageCreate(c ImageCreate) (any, error) {
	m, word, err := s.artifacts(c.Kind)
	if err != nil {
		return nil, err
	}
	img := c.Image
	if img.Digest == "" {
		return nil, ruleErr(ErrInvalid, "%s digest must not be empty", word)
	}
	if err := s.checkProof(c); err != nil {
		return nil, err
	}
	img.State, img.ErrorMessage = ImageReady, ""
	if old, ok := m[key(img.Namespace, img.Name)]; ok && c.FromRegistry && old.Usable() &&
		(old.SourceType == SourceRegistry || old.SourceType == SourceRemote) && old.SourceType == img.SourceType {
		switch {
		case old.Digest == img.Digest:
			s.holdBlob(img.Digest, img.SizeBytes, c.Holder)
			cp := *old
			return &cp, nil
		case SourceRepoTag(old.Source) == SourceRepoTag(img.Source) && old.State != ImageUpdating:
			if len(img.Description) > MaxDescription {
				return nil, ruleErr(ErrInvalid, "description is over %d bytes", MaxDescription)
			}
			img.Owner, img.CreatedAt = old.Owner, old.CreatedAt
			if img.Description == "" {
				img.Description = old.Description
			}
			s.ix().dropImage(old)
			*old = img
			s.ix().addImage(old)
			s.holdBlob(img.Digest, img.SizeBytes, c.Holder)
			cp := img
			return &cp, nil
		}
	}
	if err := s.addArtifact(m, word, &img); err != nil {
		return nil, err
	}
	s.holdBlob(img.Digest, img.SizeBytes, c.Holder)
	cp := img
	return &cp, nil
}

func (s *State) applyImageCopy(c ImageCopy) (any, error) {
	src, m, word, err := s.artifact(c.Kind, c.Namespace, c.Name)
	if err != nil {
		return nil, err
	}
	if !src.Usable() {
		return nil, ruleErr(ErrConflict, "%s %q has no content yet (%s)", word, c.Name, src.State)
	}
	cp := *src
	cp.Name, cp.SourceType, cp.Source, cp.Owner, cp.CreatedAt = c.NewName, "local", c.Name, c.Owner, c.Time
	cp.State, cp.ErrorMessage = ImageReady, ""
	if c.Description != nil {
		cp.Description = *c.Description
	}
	if err := s.addArtifact(m, word, &cp); err != nil {
		return nil, err
	}
	out := cp
	return &out, nil
}

func (s *State) applyImageDescribe(c ImageDescribe) (any, error) {
	img, _, _, err := s.artifact(c.Kind, c.Namespace, c.Name)
	if err != nil {
		return nil, err
	}
	if len(c.Description) > MaxDescription {
		return nil, ruleErr(ErrInvalid, "description is over %d bytes", MaxDescription)
	}
	img.Description = c.Description
	out := *img
	return &out, nil
}

// usersOf names, at most five, the VM configs and VMs of a namespace that
// use an image (or ISO) by name.
func (s *State) usersOf(kind, ns, name string) []string {
	uses := func(image, iso string) bool {
		if kind == KindISO {
			return iso == name
		}
		return image == name
	}
	var out []string
	for _, c := range s.VMConfigs {
		if c.Namespace == ns && uses(c.Image, c.ISO) {
			out = append(out, "vmconfig "+c.Name)
		}
	}
	for _, vm := range s.VMs {
		if vm.Namespace == ns && uses(vm.Image, vm.ISO) {
			out = append(out, "vm "+vm.Name)
		}
	}
	slices.Sort(out)
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("%d more", len(out)-5))
	}
	return out
}

func (s *State) applyImageDelete(c ImageDelete) (any, error) {
	img, m, word, err := s.artifact(c.Kind, c.Namespace, c.Name)
	if err != nil {
		return nil, err
	}
	if img.State == ImageUpdating {
		return nil, ruleErr(ErrConflict, "%s %q is being updated by a commit or save", word, c.Name)
	}
	if users := s.usersOf(c.Kind, c.Namespace, c.Name); len(users) > 0 {
		return nil, ruleErr(ErrConflict, "%s %q is in use by %s", word, c.Name, strings.Join(users, ", "))
	}
	delete(m, key(c.Namespace, c.Name))
	s.ix().dropImage(img)
	return nil, nil
}

func images(s *State) map[string]*Image { return s.Images }

func isos(s *State) map[string]*Image { return s.ISOs }

// Images returns the images of a namespace, sorted.
func (f *FSM) Images(ns string) []Image {
	return list(f, images, func(img *Image) bool { return img.Namespace == ns })
}

// AllImages returns the images of every namespace, sorted: one pass over
// them (Images of each namespace in turn costs a pass per namespace).
func (f *FSM) AllImages() []Image { return list(f, images, nil) }

// Image returns one image.
func (f *FSM) Image(ns, name string) (Image, bool) { return get(f, images, key(ns, name)) }

// NamespaceHolds reports whether an image or ISO of namespace ns has the
// content digest (its disk or its NVRAM): whoever may use ns may read those
// bytes. VMs do not count: a VM deployed from a registry reference names a
// digest before its bytes were received.
func (f *FSM) NamespaceHolds(ns, digest string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.ix().holds(ns, digest)
}

// ISOs returns the ISOs of a namespace, sorted.
func (f *FSM) ISOs(ns string) []Image {
	return list(f, isos, func(img *Image) bool { return img.Namespace == ns })
}

// ISO returns one ISO.
func (f *FSM) ISO(ns, name string) (Image, bool) { return get(f, isos, key(ns, name)) }

// NameTaken returns the kind (image or iso) of what holds a name in a
// namespace, or "" when nothing does: images and ISOs share their names.
func (f *FSM) NameTaken(ns, name string) string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.nameTaken(ns, name)
}

// validDigest reports whether d is sha256:<64 lowercase hex digits>.
func validDigest(d string) bool {
	hexPart, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexPart) != 64 {
		return false
	}
	for _, c := range hexPart {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
