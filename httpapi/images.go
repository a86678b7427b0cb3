package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/raftfsm"
)

func (s *Server) listImages(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	items := []api.Image{}
	for _, img := range s.b.FSM().Images(ns) {
		items = append(items, imageToAPI(img))
	}
	writeJSON(w, http.StatusOK, api.List[api.Image]{Items: items})
	return nil
}

// uploadImage streams an image into this peer's blob store (never holding it
// in memory), then records it through the leader. The body is multipart with
// a "name" field and the file in "image", or raw bytes with ?name=.
func (s *Server) uploadImage(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	name := r.URL.Query().Get("name")
	description := r.URL.Query().Get("description")
	checkName := func() error {
		if err := api.ValidateImageName("name", name); err != nil {
			return badRequest("field \"name\": %s", err)
		}
		if _, ok := s.b.FSM().Image(ns, name); ok {
			return errorf(http.StatusConflict, api.ReasonAlreadyExists, "image %q already exists in namespace %q", name, ns)
		}
		return nil
	}
	var digest string
	var size int64
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "multipart/form-data":
		mr, err := r.MultipartReader()
		if err != nil {
			return badRequest("multipart body: %v", err)
		}
		for {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return badRequest("multipart body: %v", err)
			}
			switch part.FormName() {
			case "name", "description":
				v, err := io.ReadAll(io.LimitReader(part, 4096))
				if err != nil {
					return badRequest("multipart field %q: %v", part.FormName(), err)
				}
				if part.FormName() == "name" {
					name = strings.TrimSpace(string(v))
				} else {
					description = string(v)
				}
			case "image":
				if digest != "" {
					return badRequest("more than one \"image\" file")
				}
				if name != "" {
					if err := checkName(); err != nil {
						return err
					}
				}
				digest, size, err = s.b.Images().Put(r.Context(), part, "")
				if err != nil {
					return badRequest("receiving the image: %v", err)
				}
			}
		}
		if digest == "" {
			return badRequest("field \"image\": no file in the multipart body")
		}
	case "", "application/octet-stream":
		if err := checkName(); err != nil {
			return err
		}
		var err error
		digest, size, err = s.b.Images().Put(r.Context(), r.Body, "")
		if err != nil {
			return badRequest("receiving the image: %v", err)
		}
	default:
		return badRequest("Content-Type %q: send multipart/form-data or application/octet-stream", mt)
	}
	img, err := s.recordImage(r.Context(), ns, name, description, digest, size)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, imageToAPI(img))
	return nil
}

// recordImage checks an uploaded blob and records the image; on any failure
// it removes the blob unless another image uses it.
func (s *Server) recordImage(ctx context.Context, ns, name, description, digest string, size int64) (raftfsm.Image, error) {
	keep := false
	defer func() {
		if _, used := s.b.FSM().Blob(digest); !keep && !used {
			_ = s.b.Images().Remove(digest)
		}
	}()
	if err := api.ValidateImageName("name", name); err != nil {
		return raftfsm.Image{}, badRequest("field \"name\": %s", err)
	}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	info, err := imagestore.Inspect(ictx, s.b.Images().Path(digest))
	cancel()
	if err != nil {
		return raftfsm.Image{}, badRequest("not a disk image: %v", err)
	}
	if info.Format != "qcow2" && info.Format != "raw" {
		return raftfsm.Image{}, badRequest("image format %s: upload qcow2 or raw", info.Format)
	}
	if info.BackingFile != "" {
		return raftfsm.Image{}, badRequest("the image has a backing file (%s); upload a standalone image (qemu-img convert)", info.BackingFile)
	}
	img := raftfsm.Image{
		Name: name, Namespace: ns, Digest: digest, SizeBytes: size, VirtualSize: info.VirtualSize, Format: info.Format,
		Arch: runtime.GOARCH, Description: description, SourceType: "userUpload", Owner: owner(ctx), CreatedAt: time.Now().UTC().Truncate(time.Second),
	}
	actx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	if _, err := s.b.Apply(actx, raftfsm.TypeImageCreate, raftfsm.ImageCreate{Image: img, Holder: s.b.Name()}); err != nil {
		return raftfsm.Image{}, err
	}
	keep = true
	return img, nil
}

// serveBlob streams a blob this peer holds to another peer (Range supported).
func (s *Server) serveBlob(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	digest := p.ByName("digest")
	if !imagestore.ValidDigest(digest) {
		return badRequest("%q is not a sha256 digest", digest)
	}
	f, err := s.b.Images().Open(digest)
	if errors.Is(err, imagestore.ErrNotFound) {
		return notFound("blob %s is not on peer %s", digest, s.b.Name())
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat blob: %w", err)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("ETag", `"`+digest+`"`)
	http.ServeContent(w, r, "", st.ModTime(), f)
	return nil
}
