package httpapi

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/raftfsm"
)

// downloadImage streams an image's disk: from this peer's blob store when it
// holds it, or from a peer that does. The answer has Content-Length, ETag
// (the digest), Content-Disposition with a file name, and honours Range and
// If-Range, so that a broken download resumes.
func (s *imagesAPI) downloadImage(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	img, err := imageArtifact().lookup(s.core, p)
	if err != nil {
		return err
	}
	if !img.Usable() {
		return errorf(http.StatusConflict, api.ReasonConflict, "image %q has no content yet (%s)", img.Name, stateOf(img))
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("ETag", `"`+img.Digest+`"`)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": fileName(img)}))
	f, err := s.images.Open(img.Digest)
	if err == nil {
		defer f.Close()
		return serveBlobFile(w, r, f, `"`+img.Digest+`"`)
	}
	if !errors.Is(err, imagestore.ErrNotFound) {
		return err
	}
	return s.streamFromHolder(w, r, img.Digest)
}

// fileName is what a downloaded disk is saved as: the image's name, with
// the extension of its format unless it has one.
func fileName(img raftfsm.Image) string {
	ext := map[string]string{"qcow2": ".qcow2", "raw": ".img", "iso": ".iso"}[img.Format]
	if ext == "" || strings.HasSuffix(img.Name, ext) {
		return img.Name
	}
	return img.Name + ext
}

// streamFromHolder answers with the blob as a peer that holds it serves it
// (status, length, range, the type that carries a multipart boundary, and
// a refused range as the holder refused it), trying the holders in turn.
func (s *imagesAPI) streamFromHolder(w http.ResponseWriter, r *http.Request, digest string) error {
	b, _ := s.replica.FSM().Blob(digest)
	var errs []error
	for _, holder := range b.Holders {
		addr := s.links.PeerAddr(holder)
		if holder == s.replica.Name() || addr == "" {
			continue
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, s.links.PeerScheme()+"://"+addr+imagestore.BlobPath(digest), nil)
		if err != nil {
			return err
		}
		for _, k := range []string{"Range", "If-Range"} {
			if v := r.Header.Get(k); v != "" {
				req.Header.Set(k, v)
			}
		}
		resp, err := (&http.Client{Transport: s.fwd.tr}).Do(req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch resp.StatusCode {
		case http.StatusOK, http.StatusPartialContent, http.StatusRequestedRangeNotSatisfiable:
		default:
			errs = append(errs, fmt.Errorf("%s: %s", holder, resp.Status))
			resp.Body.Close()
			continue
		}
		defer resp.Body.Close()
		for _, k := range []string{"Content-Type", "Content-Length", "Content-Range", "Accept-Ranges", "Last-Modified"} {
			if v := resp.Header.Get(k); v != "" {
				w.Header().Set(k, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body) // a broken stream shows as a short body: the client resumes
		return nil
	}
	return unavailable("5", "no peer that holds the image's content answered: %v", errors.Join(errs...))
}
