package diskcheck

import (
	"bytes"
	"encoding/binary"
)

// probeSize is how much of a file the probe reads: QEMU's probe buffer.
const probeSize = 2048

// probe names the image format the first bytes of a file are, the way
// QEMU's format probes (block/*.c, *_probe) would, so that no format QEMU
// would take a file for goes unnoticed. "raw" is what no probe claims.
// "dmg" is not probed: QEMU takes a file for one only by its name.
func probe(b []byte) string {
	for _, f := range probes {
		if f.match(b) {
			return f.name
		}
	}
	return FormatRaw
}

var probes = []struct {
	name  string
	match func([]byte) bool
}{
	{FormatQcow2, func(b []byte) bool { return hasMagic(b, 0, qcow2Magic) && be32(b, 4) >= 2 }},
	{"qcow", func(b []byte) bool { return hasMagic(b, 0, qcow2Magic) && be32(b, 4) < 2 }},
	{"qed", func(b []byte) bool { return hasMagic(b, 0, "QED\x00") }},
	{"vmdk", func(b []byte) bool { return hasMagic(b, 0, "KDMV") || hasMagic(b, 0, "COWD") || vmdkDescriptor(b) }},
	{"vdi", func(b []byte) bool { return len(b) >= 0x44 && binary.LittleEndian.Uint32(b[0x40:]) == 0xbeda107f }},
	{"vhdx", func(b []byte) bool { return hasMagic(b, 0, "vhdxfile") }},
	{"vpc", func(b []byte) bool { return hasMagic(b, 0, "conectix") }},
	{"parallels", func(b []byte) bool {
		return hasMagic(b, 0, "WithoutFreeSpace") || hasMagic(b, 0, "WithouFreSpacExt")
	}},
	{"bochs", func(b []byte) bool { return hasMagic(b, 0, "Bochs Virtual HD Image") }},
	{"cloop", func(b []byte) bool { return hasMagic(b, 0, "#!/bin/sh\n#V2.0 Format\n") }},
	{"luks", func(b []byte) bool { return hasMagic(b, 0, "LUKS\xba\xbe") }},
}

func hasMagic(b []byte, off int, magic string) bool {
	return len(b) >= off+len(magic) && string(b[off:off+len(magic)]) == magic
}

func be32(b []byte, off int) uint32 {
	if len(b) < off+4 {
		return 0
	}
	return binary.BigEndian.Uint32(b[off:])
}

// vmdkDescriptor reports whether b starts like a VMDK text descriptor:
// after comment lines and blank space, a "version=1", "=2" or "=3" line.
// That is all QEMU's probe asks of one, and such a descriptor names extent
// files anywhere on the host.
func vmdkDescriptor(b []byte) bool {
	for len(b) > 0 {
		switch b[0] {
		case '#':
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				return false
			}
			b = b[i+1:]
			continue
		case ' ', '\t', '\r', '\n':
			b = b[1:]
			continue
		}
		for _, v := range []string{"version=1", "version=2", "version=3"} {
			if rest, ok := bytes.CutPrefix(b, []byte(v)); ok {
				return bytes.HasPrefix(rest, []byte("\n")) || bytes.HasPrefix(rest, []byte("\r\n"))
			}
		}
		return false
	}
	return false
}
