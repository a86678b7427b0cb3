package rawdisk

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"

	"github.com/svc-project/svc/imagestore/diskcheck"
)

// L2 entry bits (QEMU's docs/interop/qcow2.txt).
const (
	l1OffsetMask   = 0x00fffffffffffe00
	l2Compressed   = 1 << 62
	l2Zero         = 1 << 0
	l2OffsetMask   = 0x00fffffffffffe00
	compressedUnit = 512
)

// FromQcow2 writes the qcow2 at src as a raw disk at dst (a new file, its
// unallocated and zero clusters left as holes), checked first as
// diskcheck.Qcow2 checks it. On error dst is removed.
func FromQcow2(ctx context.Context, src, dst string) error {
	l, err := diskcheck.Qcow2(src)
	if err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	r := &reader{l: l, in: in, cluster: 1 << l.ClusterBits}
	return writeNew(dst, func(out *os.File) error {
		if err := r.convert(ctx, out); err != nil {
			return fmt.Errorf("convert %s: %w", src, err)
		}
		return out.Truncate(int64(l.Size))
	})
}

type reader struct {
	l       diskcheck.Qcow2Layout
	in      *os.File
	cluster uint64
	zstd    *zstd.Decoder
}

// convert walks the L1 table and each L2 table it points to, writing
// every allocated cluster's data at its guest offset.
func (r *reader) convert(ctx context.Context, out *os.File) error {
	l1 := make([]byte, uint64(r.l.L1Size)*8)
	if _, err := r.in.ReadAt(l1, int64(r.l.L1Offset)); err != nil {
		return fmt.Errorf("L1 table: %w", err)
	}
	l2Entries := r.cluster / 8
	l2 := make([]byte, r.cluster)
	data := make([]byte, r.cluster)
	for i := uint64(0); i < uint64(r.l.L1Size); i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		first := i * l2Entries * r.cluster
		if first >= r.l.Size {
			break
		}
		l2Off := binary.BigEndian.Uint64(l1[i*8:]) & l1OffsetMask
		if l2Off == 0 {
			continue // the whole range reads as zeros
		}
		if err := r.within(l2Off, r.cluster, "L2 table"); err != nil {
			return err
		}
		if _, err := r.in.ReadAt(l2, int64(l2Off)); err != nil {
			return fmt.Errorf("L2 table at %d: %w", l2Off, err)
		}
		for j := uint64(0); j < l2Entries; j++ {
			guest := first + j*r.cluster
			if guest >= r.l.Size {
				break
			}
			n := min(r.cluster, r.l.Size-guest)
			ok, err := r.clusterData(binary.BigEndian.Uint64(l2[j*8:]), data)
			if err != nil {
				return fmt.Errorf("cluster at guest offset %d: %w", guest, err)
			}
			if !ok || allZero(data[:n]) {
				continue
			}
			if _, err := out.WriteAt(data[:n], int64(guest)); err != nil {
				return err
			}
		}
	}
	return nil
}

// clusterData reads the cluster an L2 entry maps into buf; false for a
// cluster that reads as zeros.
func (r *reader) clusterData(entry uint64, buf []byte) (bool, error) {
	if entry&l2Compressed != 0 {
		return true, r.compressed(entry, buf)
	}
	off := entry & l2OffsetMask
	if off == 0 || (r.l.Version == 3 && entry&l2Zero != 0) {
		return false, nil
	}
	if off%r.cluster != 0 {
		return false, fmt.Errorf("data cluster at %d is not aligned", off)
	}
	if err := r.within(off, r.cluster, "data cluster"); err != nil {
		// the last cluster of a file may be cut short: what is missing
		// reads as zeros, as QEMU reads it
		if off >= uint64(r.l.FileSize) {
			return false, err
		}
	}
	clear(buf)
	if _, err := r.in.ReadAt(buf, int64(off)); err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return true, nil
}

// compressed inflates a compressed cluster into buf.
func (r *reader) compressed(entry uint64, buf []byte) error {
	shift := 62 - (r.l.ClusterBits - 8)
	off := entry & (1<<shift - 1)
	sectors := (entry >> shift) & (1<<(r.l.ClusterBits-8) - 1)
	size := (sectors+1)*compressedUnit - off%compressedUnit
	if off >= uint64(r.l.FileSize) {
		return fmt.Errorf("compressed cluster at %d lies past the end of the file", off)
	}
	size = min(size, uint64(r.l.FileSize)-off) // the last one may end early
	src := make([]byte, size)
	if _, err := r.in.ReadAt(src, int64(off)); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	var dec io.Reader
	switch r.l.Compression {
	case diskcheck.CompressionZstd:
		if r.zstd == nil {
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(4*r.cluster))
			if err != nil {
				return err
			}
			r.zstd = d
		}
		if err := r.zstd.Reset(bytes.NewReader(src)); err != nil {
			return err
		}
		dec = r.zstd
	default:
		dec = flate.NewReader(bytes.NewReader(src))
	}
	if _, err := io.ReadFull(dec, buf); err != nil {
		return fmt.Errorf("compressed cluster at %d does not inflate to a cluster: %w", off, err)
	}
	return nil
}

// within refuses a structure that does not lie inside the file.
func (r *reader) within(off, size uint64, what string) error {
	if off+size < off || off+size > uint64(r.l.FileSize) {
		return fmt.Errorf("%s at %d (%d bytes) runs past the end of the file (%d bytes)", what, off, size, r.l.FileSize)
	}
	return nil
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
