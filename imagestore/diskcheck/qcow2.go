package diskcheck

import (
	"encoding/binary"
	"math/bits"
)

// The qcow2 header and its extensions, as QEMU's docs/interop/qcow2.txt
// lays them out (big endian).
const (
	qcow2Magic = "QFI\xfb"

	qcow2HeaderV2 = 72  // a version 2 header ends here
	qcow2HeaderV3 = 104 // a version 3 header is at least this long

	minClusterBits = 9
	maxClusterBits = 21

	// Incompatible feature bits.
	incompatDirty       = 1 << 0
	incompatCorrupt     = 1 << 1
	incompatDataFile    = 1 << 2
	incompatCompression = 1 << 3
	incompatExtendedL2  = 1 << 4
	incompatKnown       = incompatDirty | incompatCorrupt | incompatDataFile | incompatCompression | incompatExtendedL2

	// autoclearRawData says the external data file is a valid raw image.
	autoclearRawData = 1 << 1

	// Header extension types.
	extEnd        = 0x00000000
	extBackingFmt = 0xe2792aca
	extFeatures   = 0x6803f857
	extBitmaps    = 0x23852875
	extEncryption = 0x0537be77
	extDataFile   = 0x44415441

	maxNameShown = 1023 // QEMU's own bound on a backing file's name
)

// qcow2Header is what the parser reads of a qcow2 header.
type qcow2Header struct {
	version                uint32
	backingOffset          uint64
	backingSize            uint32
	clusterBits            uint32
	size                   uint64
	cryptMethod            uint32
	l1Size                 uint32
	l1Offset               uint64
	refcountOffset         uint64
	refcountClusters       uint32
	snapshots              uint32
	snapshotsOffset        uint64
	incompatible, autoclr  uint64
	refcountOrder          uint32
	headerLength           uint32
	compressionType        uint8
	dataFile, backingName  string
	hasEncryptionExtension bool
}

// parseQcow2 reads the header of a qcow2 file of fileSize bytes from head,
// its first cluster (or the whole file when it is shorter), and refuses
// what svc does not take: a reference to any file outside this one
// (backing file, external data file), encryption, an image QEMU marked
// corrupt, features this parser does not know, and tables that lie
// outside the file.
func parseQcow2(head []byte, fileSize int64) (qcow2Header, error) {
	var h qcow2Header
	if len(head) < qcow2HeaderV2 || string(head[:4]) != qcow2Magic {
		return h, refused("the qcow2 header is cut short")
	}
	u32 := func(off int) uint32 { return binary.BigEndian.Uint32(head[off:]) }
	u64 := func(off int) uint64 { return binary.BigEndian.Uint64(head[off:]) }
	h.version, h.backingOffset, h.backingSize = u32(4), u64(8), u32(16)
	h.clusterBits, h.size, h.cryptMethod = u32(20), u64(24), u32(32)
	h.l1Size, h.l1Offset = u32(36), u64(40)
	h.refcountOffset, h.refcountClusters = u64(48), u32(56)
	h.snapshots, h.snapshotsOffset = u32(60), u64(64)
	h.refcountOrder, h.headerLength = 4, qcow2HeaderV2
	switch h.version {
	case 2:
	case 3:
		if len(head) < qcow2HeaderV3 {
			return h, refused("the qcow2 version 3 header is cut short")
		}
		h.incompatible, h.autoclr = u64(72), u64(88)
		h.refcountOrder, h.headerLength = u32(96), u32(100)
		if h.headerLength > qcow2HeaderV3 && len(head) > qcow2HeaderV3 {
			h.compressionType = head[qcow2HeaderV3]
		}
	default:
		return h, refused("qcow2 version %d is not 2 or 3", h.version)
	}
	if h.clusterBits < minClusterBits || h.clusterBits > maxClusterBits {
		return h, refused("a qcow2 cluster of 2^%d bytes is not 512 bytes to 2 MiB", h.clusterBits)
	}
	cluster := uint64(1) << h.clusterBits
	if h.version == 3 && (h.headerLength < qcow2HeaderV3 || h.headerLength%8 != 0 || uint64(h.headerLength) > cluster) {
		return h, refused("a qcow2 header length of %d bytes is not a multiple of 8 from %d to the cluster size", h.headerLength, qcow2HeaderV3)
	}
	// The first cluster holds the header, its extensions and the backing
	// file's name; what of it the file has is what is read.
	if uint64(len(head)) > cluster {
		head = head[:cluster]
	}
	if err := h.readExtensions(head); err != nil {
		return h, err
	}
	if h.backingOffset != 0 || h.backingSize != 0 {
		h.backingName = nameAt(head, h.backingOffset, h.backingSize)
		return h, refused("it has a backing file (%q); a disk must stand alone (qemu-img convert -O qcow2 makes one that does)", h.backingName)
	}
	if h.incompatible&incompatDataFile != 0 || h.dataFile != "" || h.autoclr&autoclearRawData != 0 {
		return h, refused("it keeps its data in an external data file (%q); a disk must hold its own data", h.dataFile)
	}
	if h.cryptMethod != 0 || h.hasEncryptionExtension {
		return h, refused("it is encrypted; upload a disk without encryption")
	}
	if h.incompatible&incompatCorrupt != 0 {
		return h, refused("QEMU marked this qcow2 corrupt; repair it with qemu-img check -r all")
	}
	if unknown := h.incompatible &^ incompatKnown; unknown != 0 {
		return h, refused("it uses qcow2 features this service does not know (incompatible feature bits %#x)", unknown)
	}
	if h.refcountOrder > 6 {
		return h, refused("a qcow2 refcount width of 2^%d bits is over 64", h.refcountOrder)
	}
	if h.size == 0 || h.size > MaxVirtualSize {
		return h, refused("a virtual size of %d bytes is not from 1 byte to %d", h.size, uint64(MaxVirtualSize))
	}
	return h, h.checkTables(uint64(fileSize))
}

// readExtensions walks the header extensions that follow the header.
func (h *qcow2Header) readExtensions(head []byte) error {
	off := uint64(h.headerLength)
	for n := 0; ; n++ {
		if off == uint64(len(head)) && h.version == 2 {
			return nil // a version 2 header may end with the cluster
		}
		if off+8 > uint64(len(head)) || n > 1024 {
			return refused("the qcow2 header extensions run past the first cluster")
		}
		typ, size := binary.BigEndian.Uint32(head[off:]), uint64(binary.BigEndian.Uint32(head[off+4:]))
		off += 8
		if typ == extEnd {
			return nil
		}
		end := off + (size+7)/8*8
		if end > uint64(len(head)) {
			return refused("a qcow2 header extension (type %#x) runs past the first cluster", typ)
		}
		switch typ {
		case extDataFile:
			h.dataFile = printable(head[off : off+size])
			if h.dataFile == "" {
				h.dataFile = "(no name)"
			}
		case extEncryption:
			h.hasEncryptionExtension = true
		case extBackingFmt, extFeatures, extBitmaps:
		}
		off = end
	}
}

// checkTables refuses an L1 table, refcount table or snapshot table that is
// not cluster-aligned or does not lie inside the file: QEMU would read
// past the end of a truncated file as zeros.
func (h *qcow2Header) checkTables(fileSize uint64) error {
	cluster := uint64(1) << h.clusterBits
	l2Entries := cluster / 8
	if h.version == 3 && h.incompatible&incompatExtendedL2 != 0 {
		l2Entries = cluster / 16
	}
	// Enough L1 entries to map the whole virtual size.
	perL1 := l2Entries * cluster
	need := (h.size + perL1 - 1) / perL1
	if uint64(h.l1Size) < need {
		return refused("the qcow2 L1 table has %d entries; mapping %d bytes needs %d", h.l1Size, h.size, need)
	}
	tables := []struct {
		what      string
		off, size uint64
	}{
		{"L1 table", h.l1Offset, uint64(h.l1Size) * 8},
		{"refcount table", h.refcountOffset, uint64(h.refcountClusters) * cluster},
	}
	if h.snapshots > 0 {
		tables = append(tables, struct {
			what      string
			off, size uint64
		}{"snapshot table", h.snapshotsOffset, 1})
	}
	for _, t := range tables {
		if t.off%cluster != 0 || t.off == 0 {
			return refused("the qcow2 %s at offset %d is not aligned to a cluster", t.what, t.off)
		}
		hi, carry := bits.Add64(t.off, t.size, 0)
		if carry != 0 || hi > fileSize {
			return refused("the qcow2 %s (offset %d, %d bytes) runs past the end of the file (%d bytes): is the file cut short?", t.what, t.off, t.size, fileSize)
		}
	}
	if h.refcountClusters == 0 {
		return refused("the qcow2 image has no refcount table")
	}
	return nil
}

// nameAt is the name of size bytes at off in head, as far as head holds it.
func nameAt(head []byte, off uint64, size uint32) string {
	if off >= uint64(len(head)) {
		return "(outside the first cluster)"
	}
	end := min(off+uint64(size), uint64(len(head)), off+maxNameShown)
	return printable(head[off:end])
}

// printable quotes a name from a header for an error message: at most
// maxNameShown bytes, invalid UTF-8 and control characters replaced.
func printable(b []byte) string {
	if len(b) > maxNameShown {
		b = b[:maxNameShown]
	}
	out := make([]rune, 0, len(b))
	for _, r := range string(b) {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			r = '?'
		}
		out = append(out, r)
	}
	return string(out)
}
