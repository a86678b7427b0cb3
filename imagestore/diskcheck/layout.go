package diskcheck

// Compression types of a qcow2's compressed clusters.
const (
	CompressionDeflate = 0
	CompressionZstd    = 1
)

// Qcow2Layout is where a checked qcow2 keeps its data, for a reader that
// maps it without QEMU.
type Qcow2Layout struct {
	Version     uint32
	ClusterBits uint32
	// Size is the virtual size in bytes.
	Size uint64
	// L1Size entries of the L1 table at L1Offset.
	L1Size   uint32
	L1Offset uint64
	// ExtendedL2 says L2 entries have subcluster bitmaps (16 bytes each).
	ExtendedL2 bool
	// Compression is CompressionDeflate or CompressionZstd.
	Compression uint8
	// FileSize is the qcow2 file's size.
	FileSize int64
}

// Qcow2 checks the qcow2 at path with this package's parser (Header's
// refusals: no backing or data file, no encryption, tables inside the
// file) and returns its layout.
func Qcow2(path string) (Qcow2Layout, error) {
	head, size, err := readHead(path, maxHead)
	if err != nil {
		return Qcow2Layout{}, err
	}
	if probe(head[:min(len(head), probeSize)]) != FormatQcow2 {
		return Qcow2Layout{}, refused("it is not a qcow2 image")
	}
	h, err := parseQcow2(head, size)
	if err != nil {
		return Qcow2Layout{}, err
	}
	l := Qcow2Layout{
		Version: h.version, ClusterBits: h.clusterBits, Size: h.size, L1Size: h.l1Size, L1Offset: h.l1Offset,
		ExtendedL2: h.version == 3 && h.incompatible&incompatExtendedL2 != 0, FileSize: size,
	}
	if h.version == 3 && h.incompatible&incompatCompression != 0 {
		l.Compression = h.compressionType
	}
	if l.Compression != CompressionDeflate && l.Compression != CompressionZstd {
		return l, refused("qcow2 compression type %d is not deflate or zstd", l.Compression)
	}
	if l.ExtendedL2 {
		return l, refused("qcow2 subclusters (extended L2 entries) are not read here; qemu-img convert -O qcow2 makes a disk without them")
	}
	return l, nil
}
