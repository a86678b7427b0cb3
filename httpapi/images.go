package httpapi

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/imagestore/diskcheck"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/raftfsm"
)

// imagesAPI serves images and ISOs: uploads, generated images, downloads, caches.
type imagesAPI struct {
	*core
	images *imagestore.Store
	jobs   Jobs
	fwd    *forwarder
	links  PeerLinks
	disk   *diskbudget.Budget
}

func (s *imagesAPI) routes(srv *Server) {
	const ns = "/api/v1/namespaces/:namespace"
	get, post, del := http.MethodGet, http.MethodPost, http.MethodDelete
	img, iso := imageArtifact(), isoArtifact()
	srv.handle(Route{Method: get, Path: ns + "/images", Rule: RuleMember}, img.listHandler(s.core))
	// Generated and uploaded files stay on the peer that makes or receives
	// them; only the record goes to the leader.
	srv.handle(Route{Method: post, Path: ns + "/images", Rule: RuleMember, Write: true}, s.generateImage)
	srv.handle(Route{Method: get, Path: ns + "/images/:image", Rule: RuleMember}, img.getHandler(s.core))
	srv.handle(Route{Method: del, Path: ns + "/images/:image", Rule: RuleMember, Write: true, Target: Leader}, img.deleteHandler(s.core))
	srv.handle(Route{Method: post, Path: ns + "/images/:image/copy", Rule: RuleMember, Write: true, Target: Leader}, img.copyHandler(s.core))
	srv.handle(Route{Method: post, Path: ns + "/images/:image/description", Rule: RuleMember, Write: true, Target: Leader}, img.describeHandler(s.core))
	srv.handle(Route{Method: get, Path: ns + "/images/:image/download", Rule: RuleMember}, s.downloadImage)
	srv.handle(Route{Method: post, Path: ns + "/images/:image/cache", Rule: RuleMember, Write: true, Target: Leader}, s.cacheImage)
	srv.handle(Route{Method: get, Path: ns + "/images/:image/cache", Rule: RuleMember}, s.imageCache)
	srv.handle(Route{Method: del, Path: ns + "/images/:image/cache", Rule: RuleMember, Write: true, Target: Leader}, s.uncacheImage)
	srv.handle(Route{Method: post, Path: ns + "/upload/image", Rule: RuleMember, Write: true, Upload: true}, s.uploadImage)
	srv.handle(Route{Method: get, Path: ns + "/isos", Rule: RuleMember}, iso.listHandler(s.core))
	srv.handle(Route{Method: get, Path: ns + "/isos/:iso", Rule: RuleMember}, iso.getHandler(s.core))
	srv.handle(Route{Method: del, Path: ns + "/isos/:iso", Rule: RuleMember, Write: true, Target: Leader}, iso.deleteHandler(s.core))
	srv.handle(Route{Method: post, Path: ns + "/isos/:iso/copy", Rule: RuleMember, Write: true, Target: Leader}, iso.copyHandler(s.core))
	srv.handle(Route{Method: post, Path: ns + "/isos/:iso/description", Rule: RuleMember, Write: true, Target: Leader}, iso.describeHandler(s.core))
	srv.handle(Route{Method: post, Path: ns + "/upload/iso", Rule: RuleMember, Write: true, Upload: true}, s.uploadISO)
}

// uploadImage streams an image into a staging file of this request (never
// holding it in memory), checks it there, commits it to this peer's blob
// store and records it through the leader. The body is multipart with a
// "name" field and the file in "image", or raw bytes with ?name=.
func (s *imagesAPI) uploadImage(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.upload(w, r, p, imageArtifact().kind, func(ctx context.Context, st *imagestore.Staged, img *raftfsm.Image) error {
		ictx, cancel := context.WithTimeout(ctx, checkTimeout)
		info, err := diskcheck.Disk(ictx, st.Path(), "")
		cancel()
		if err != nil {
			return refusedDisk("not a disk image svc takes: ", err)
		}
		img.VirtualSize, img.Format, img.Arch = info.VirtualSize, info.Format, runtime.GOARCH
		return nil
	})
}

// uploadISO is uploadImage for an ISO 9660 image (field "iso").
func (s *imagesAPI) uploadISO(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.upload(w, r, p, isoArtifact().kind, func(_ context.Context, st *imagestore.Staged, img *raftfsm.Image) error {
		info, err := diskcheck.ISO(st.Path())
		if errors.Is(err, diskcheck.ErrRefused) && diskcheck.IsZip(st.Path()) {
			// a macOS restore image installs macOS as an ISO installs
			// Linux; a zip is answered with what is wrong with it as one
			var ipsw diskcheck.Info
			if ipsw, err = diskcheck.IPSW(st.Path()); err == nil {
				info, img.OS = ipsw, raftfsm.OSMacOS
			}
		}
		if err != nil {
			return refusedDisk("", err)
		}
		img.VirtualSize, img.Format = info.VirtualSize, info.Format
		return nil
	})
}

// checkTimeout bounds the check of a disk that enters the cluster (qemu-img
// check reads every table of a qcow2).
const checkTimeout = 10 * time.Minute

// refusedDisk answers a file diskcheck refused with a 400 that says why
// (after prefix), and any other failure of the check as it is.
func refusedDisk(prefix string, err error) error {
	if errors.Is(err, diskcheck.ErrRefused) {
		return badRequest("%s%v", prefix, err)
	}
	return err
}

// upload receives, checks (check fills in what the file says of itself)
// and records an image or ISO.
func (s *imagesAPI) upload(w http.ResponseWriter, r *http.Request, p httprouter.Params, kind string,
	check func(context.Context, *imagestore.Staged, *raftfsm.Image) error) error {
	ns := p.ByName("namespace")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	checkName := func(name string) error { return s.nameFree(kind, ns, name) }
	up, err := s.receiveUpload(r, kind, checkName)
	if err != nil {
		return err
	}
	defer up.staged.Discard()
	if err := checkName(up.name); err != nil {
		return err
	}
	img := raftfsm.Image{
		Name: up.name, Namespace: ns, Digest: up.staged.Digest, SizeBytes: up.staged.Size, Description: up.description,
		SourceType: "userUpload", Owner: owner(r.Context()), CreatedAt: time.Now().UTC().Truncate(time.Second),
	}
	if err := check(r.Context(), up.staged, &img); err != nil {
		return err
	}
	if err := s.record(r.Context(), kind, up.staged, img); err != nil {
		return err
	}
	if kind == raftfsm.KindISO {
		writeJSON(w, http.StatusCreated, isoToAPI(img))
	} else {
		writeJSON(w, http.StatusCreated, imageToAPI(img))
	}
	return nil
}

// nameFree checks an image or ISO name: valid and not taken.
func (s *imagesAPI) nameFree(kind, ns, name string) error {
	if err := api.ValidateImageName("name", name); err != nil {
		return badRequest("field \"name\": %s", err)
	}
	if taken := s.replica.FSM().NameTaken(ns, name); taken != "" {
		return errorf(http.StatusConflict, api.ReasonAlreadyExists, "%s %q already exists in namespace %q", taken, name, ns)
	}
	return nil
}

// record commits a staged file and records it as an image or ISO held here.
func (s *imagesAPI) record(ctx context.Context, kind string, st *imagestore.Staged, img raftfsm.Image) error {
	return st.Ingest(ctx, s.replica.FSM().BlobInUse, func(ctx context.Context) error {
		// Received here, on whichever peer: this peer's own proposal.
		return s.propose(ctx, raftfsm.TypeImageCreate, raftfsm.ImageCreate{Kind: kind, Image: img, Holder: s.replica.Name(), Proof: raftfsm.ProofReceived})
	})
}

// heldReader reads an upload's body, growing hold as the bytes read pass
// it; past the disk's room it fails with the budget's refusal.
type heldReader struct {
	r    io.Reader
	hold *diskbudget.Hold
	n    int64
}

func (h *heldReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.n += int64(n)
	if werr := h.hold.Wrote(h.n); werr != nil {
		return n, werr
	}
	return n, err
}

// Bounds of a generated image's virtual size.
const (
	minGeneratedSize = 1 << 20
	maxGeneratedSize = 64 << 40
)

// generateImage makes an empty qcow2 disk of the asked virtual size on this
// peer and records it: a disk for an OS installed from an ISO, or extra
// storage.
func (s *imagesAPI) generateImage(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	var req api.GenerateImageRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	size, err := api.ParseSize(req.Size)
	if err != nil || size < minGeneratedSize || size > maxGeneratedSize {
		return badRequest("field \"size\": %q is not a size from 1M to 64T with a unit K, M, G or T (e.g. \"10G\")", req.Size)
	}
	if len(req.Description) > raftfsm.MaxDescription {
		return badRequest("field \"description\": over %d bytes", raftfsm.MaxDescription)
	}
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	if err := s.nameFree(raftfsm.KindImage, ns, req.Name); err != nil {
		return err
	}
	path, err := s.images.TempPath("generate")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if err := imagestore.CreateEmpty(ctx, path, size); err != nil {
		return err
	}
	st, err := s.images.StageFile(ctx, path)
	if err != nil {
		return err
	}
	defer st.Discard()
	info, err := diskcheck.Disk(ctx, st.Path(), diskcheck.FormatQcow2)
	if err != nil {
		return err
	}
	img := raftfsm.Image{
		Name: req.Name, Namespace: ns, Digest: st.Digest, SizeBytes: st.Size, VirtualSize: info.VirtualSize, Format: info.Format,
		Arch: runtime.GOARCH, Description: req.Description, SourceType: "generated", Owner: owner(r.Context()),
		CreatedAt: time.Now().UTC().Truncate(time.Second),
	}
	if err := s.record(r.Context(), raftfsm.KindImage, st, img); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, imageToAPI(img))
	return nil
}

// upload is a received upload: its file, staged, and its form fields.
type upload struct {
	name, description string
	staged            *imagestore.Staged
}

// maxFormField bounds a multipart field that is not the file.
const maxFormField = 4096

// receiveUpload stages the file of an upload: the multipart field fileField
// (with "name" and "description" fields) or a raw body (?name=,
// ?description=). checkName runs as soon as the name is known and before the
// file is received, so a refused name costs no transfer.
func (s *imagesAPI) receiveUpload(r *http.Request, fileField string, checkName func(string) error) (*upload, error) {
	q := r.URL.Query()
	up := &upload{name: q.Get("name"), description: q.Get("description")}
	stage := func(body io.Reader) error {
		if up.staged != nil {
			return badRequest("more than one %q file", fileField)
		}
		if up.name != "" {
			if err := checkName(up.name); err != nil {
				return err
			}
		}
		// Room on the disk is held for the upload's length (as sent), and
		// more as a longer body comes: past the room it stops with 413.
		hold, err := s.disk.Reserve("an upload", max(r.ContentLength, 0), "")
		if err != nil {
			return errorf(http.StatusRequestEntityTooLarge, api.ReasonRequestEntityTooLarge, "%v", err)
		}
		defer hold.Release()
		st, err := s.images.StageNamed(r.Context(), &heldReader{r: body, hold: hold}, hold.Track)
		if nr := (*diskbudget.NoRoomError)(nil); errors.As(err, &nr) {
			return errorf(http.StatusRequestEntityTooLarge, api.ReasonRequestEntityTooLarge, "%v", nr)
		}
		if err != nil {
			return bodyError(err)
		}
		up.staged = st
		return nil
	}
	fail := func(err error) (*upload, error) {
		if up.staged != nil {
			up.staged.Discard()
		}
		return nil, err
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "multipart/form-data":
		mr, err := r.MultipartReader()
		if err != nil {
			return nil, badRequest("multipart body: %v", err)
		}
		for {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fail(bodyError(err))
			}
			switch part.FormName() {
			case "name", "description":
				v, err := io.ReadAll(io.LimitReader(part, maxFormField+1))
				if err != nil || len(v) > maxFormField {
					return fail(badRequest("multipart field %q: unreadable or over %d bytes", part.FormName(), maxFormField))
				}
				if part.FormName() == "name" {
					up.name = strings.TrimSpace(string(v))
				} else {
					up.description = string(v)
				}
			case fileField:
				if err := stage(part); err != nil {
					return fail(err)
				}
			}
		}
		if up.staged == nil {
			return nil, badRequest("field %q: no file in the multipart body", fileField)
		}
	case "", "application/octet-stream":
		if up.name == "" {
			return nil, badRequest("query parameter \"name\" is required with a raw body")
		}
		if err := stage(r.Body); err != nil {
			return nil, err
		}
	default:
		return nil, badRequest("Content-Type %q: send multipart/form-data or application/octet-stream", mt)
	}
	if len(up.description) > maxFormField {
		return fail(badRequest("description is over %d bytes", maxFormField))
	}
	return up, nil
}

// serveBlob streams a blob this peer holds to another peer (Range supported).
func (s *peerAPI) serveBlob(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	digest := p.ByName("digest")
	if !imagestore.ValidDigest(digest) {
		return badRequest("%q is not a sha256 digest", digest)
	}
	f, err := s.images.Open(digest)
	if errors.Is(err, imagestore.ErrNotFound) {
		return notFound("blob %s is not on peer %s", digest, s.replica.Name())
	}
	if err != nil {
		return err
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	return serveBlobFile(w, r, f, `"`+digest+`"`)
}
