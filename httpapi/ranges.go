package httpapi

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// maxRanges bounds the ranges of one Range header.
const maxRanges = 16

// serveBlobFile answers with a blob's file as http.ServeContent does (Range,
// If-Range, multipart for several ranges), except that a Range that is
// malformed or cannot be satisfied is a 416 Status with Content-Range
// "bytes */<size>", like every other refusal, not a line of text.
func serveBlobFile(w http.ResponseWriter, r *http.Request, f *os.File, etag string) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat blob: %w", err)
	}
	w.Header().Set("ETag", etag)
	if err := checkRange(r, st.Size(), etag); err != nil {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", st.Size()))
		return err
	}
	http.ServeContent(w, r, "", st.ModTime(), f)
	return nil
}

// checkRange refuses a Range header that http.ServeContent would answer
// with a bare text 416, or wrongly ("bytes=-0": a 206 with an invalid
// Content-Range). A Range that If-Range voids (another ETag) is no matter:
// the whole content is sent.
func checkRange(r *http.Request, size int64, etag string) error {
	h := r.Header.Get("Range")
	if h == "" {
		return nil
	}
	if ir := r.Header.Get("If-Range"); ir != "" && ir != etag {
		return nil
	}
	refuse := func(why string) error {
		return errorf(http.StatusRequestedRangeNotSatisfiable, "BadRequest", "range %q: %s (the content is %d bytes)", h, why, size)
	}
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok {
		return refuse("only byte ranges (bytes=...) are served")
	}
	parts := strings.Split(spec, ",")
	if len(parts) > maxRanges {
		return refuse(fmt.Sprintf("over %d ranges", maxRanges))
	}
	satisfiable := false
	for _, p := range parts {
		first, last, ok := strings.Cut(strings.TrimSpace(p), "-")
		if !ok {
			return refuse("a range is first-last, first- or -suffix")
		}
		if first == "" { // the last n bytes
			n, err := strconv.ParseUint(last, 10, 63)
			if err != nil || n == 0 {
				return refuse("a suffix range is a positive number of bytes")
			}
			satisfiable = satisfiable || size > 0
			continue
		}
		a, err := strconv.ParseUint(first, 10, 63)
		if err != nil {
			return refuse("a range's first byte is a number")
		}
		if last != "" {
			b, err := strconv.ParseUint(last, 10, 63)
			if err != nil || b < a {
				return refuse("a range's last byte is a number no smaller than its first")
			}
		}
		satisfiable = satisfiable || int64(a) < size
	}
	if !satisfiable {
		return refuse("no range starts inside the content")
	}
	return nil
}
