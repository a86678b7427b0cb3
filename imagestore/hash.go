package imagestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
)

// hashChunk and hashChunks size the read-ahead of hashReader: a few MiB in
// flight, so that reading the next chunk overlaps hashing this one.
const (
	hashChunk  = 1 << 20
	hashChunks = 4
)

// HashReader returns the sha256 digest ("sha256:...") and length of what r
// yields. One goroutine reads while the caller's hashes, so a file just
// written (in the page cache) is hashed at the speed of sha256 alone rather
// than of read plus sha256.
func HashReader(ctx context.Context, r io.Reader) (string, int64, error) {
	free := make(chan []byte, hashChunks)
	full := make(chan []byte, hashChunks)
	for range hashChunks {
		free <- make([]byte, hashChunk)
	}
	var readErr error // set before full is closed
	go func() {
		defer close(full)
		for {
			buf := <-free
			if err := ctx.Err(); err != nil {
				readErr = err
				return
			}
			n, err := io.ReadFull(r, buf)
			if n > 0 {
				full <- buf[:n]
			}
			switch {
			case err == io.EOF || err == io.ErrUnexpectedEOF:
				return
			case err != nil:
				readErr = err
				return
			}
		}
	}()
	h := sha256.New()
	var n int64
	for buf := range full {
		h.Write(buf)
		n += int64(len(buf))
		free <- buf[:cap(buf)]
	}
	if readErr != nil {
		return "", n, readErr
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), n, nil
}
