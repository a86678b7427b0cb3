package backup

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"
)

// Format names the file kind in every header.
const Format = "svc-snapshot"

// Version is the file layout this package writes and the newest it reads.
const Version = 1

// MaxHeaderBytes bounds the header line a reader takes.
const MaxHeaderBytes = 64 << 10

// ErrCorrupt is returned for a file that is not a whole snapshot: a bad
// header, a body shorter than its header says, or a checksum that does not
// match.
var ErrCorrupt = errors.New("not a whole svc snapshot")

// Header is the first line of a snapshot file.
type Header struct {
	Format     string    `json:"format"`
	Version    int       `json:"version"`
	ClusterID  string    `json:"clusterId"`
	Index      uint64    `json:"index"`
	Term       uint64    `json:"term"`
	CreatedAt  time.Time `json:"createdAt"`
	SVCVersion string    `json:"svcVersion"`
	// Peer is the peer that took it.
	Peer string `json:"peer"`
	// Size is the length of the state that follows the header.
	Size int64 `json:"size"`
	// Secret is the cluster secret (never printed by inspect).
	Secret []byte `json:"secret,omitempty"`
}

// Write writes a snapshot file: h (Format and Version filled in), then
// exactly h.Size bytes of state from body, then the checksum line. It
// streams: nothing is held but a copy buffer.
func Write(w io.Writer, h Header, body io.Reader) error {
	h.Format, h.Version = Format, Version
	line, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("snapshot header: %w", err)
	}
	sum := sha256.New()
	mw := io.MultiWriter(w, sum)
	if _, err := mw.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	n, err := io.Copy(mw, io.LimitReader(body, h.Size))
	if err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	if n != h.Size {
		return fmt.Errorf("write snapshot: the state ended after %d of %d bytes", n, h.Size)
	}
	if _, err := fmt.Fprintf(w, "sha256 %s\n", hex.EncodeToString(sum.Sum(nil))); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	return nil
}

// Reader reads a snapshot file: its Header, then Body, then Verify.
type Reader struct {
	Header Header
	br     *bufio.Reader
	sum    hash.Hash
	body   io.Reader
}

// NewReader reads and checks the header of a snapshot file.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	line, err := readLine(br, MaxHeaderBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrCorrupt, err)
	}
	var h Header
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrCorrupt, err)
	}
	if h.Format != Format {
		return nil, fmt.Errorf("%w: header names format %q", ErrCorrupt, h.Format)
	}
	if h.Version > Version || h.Version < 1 {
		return nil, fmt.Errorf("snapshot file version %d: this svc reads versions 1 to %d", h.Version, Version)
	}
	if h.Size < 0 || h.ClusterID == "" {
		return nil, fmt.Errorf("%w: header without a cluster or size", ErrCorrupt)
	}
	sum := sha256.New()
	sum.Write(line)
	sum.Write([]byte{'\n'})
	rd := &Reader{Header: h, br: br, sum: sum}
	rd.body = io.TeeReader(io.LimitReader(br, h.Size), sum)
	return rd, nil
}

// Body is the state: exactly Header.Size bytes, unverified until Verify.
func (r *Reader) Body() io.Reader { return r.body }

// Verify reads what is left of the body and the checksum line, and says
// whether the file is whole. Nothing read from Body may be used before it
// returns nil.
func (r *Reader) Verify() error {
	if _, err := io.Copy(io.Discard, r.body); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	// The body is short when the sum line starts too soon: count it.
	line, err := readLine(r.br, 128)
	if err != nil {
		return fmt.Errorf("%w: no checksum line after %d bytes of state: %w", ErrCorrupt, r.Header.Size, err)
	}
	want, ok := strings.CutPrefix(string(line), "sha256 ")
	if !ok {
		return fmt.Errorf("%w: the state is shorter or longer than its header says", ErrCorrupt)
	}
	if got := hex.EncodeToString(r.sum.Sum(nil)); got != want {
		return fmt.Errorf("%w: checksum %s, the file says %s", ErrCorrupt, got, want)
	}
	if _, err := r.br.ReadByte(); err != io.EOF {
		return fmt.Errorf("%w: bytes after the checksum line", ErrCorrupt)
	}
	return nil
}

// readLine reads up to '\n' (not returned), at most max bytes.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > max {
			return nil, fmt.Errorf("a line of over %d bytes", max)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}
