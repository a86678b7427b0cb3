package disktest

import "encoding/binary"

// LUKS1 layout constants (the on-disk format QEMU's luks driver reads).
const (
	luksSectorSize   = 512
	luksHeaderSector = 8    // key material starts 4 KiB in
	luksStripes      = 4000 // the anti-forensic split every LUKS1 slot uses
	luksKeyBytes     = 64   // aes-256 in xts mode: two 32-byte keys
	luksSlotDisabled = 0x0000dead
)

// LUKS1 returns a LUKS1 volume with every key slot disabled and payload
// bytes of (zero) payload after its key material. It is built here, not by
// qemu-img create -f luks: that benchmarks PBKDF2 against the thread's CPU
// clock first and fails ("Unable to get accurate CPU usage") when the
// clock does not move, which happens on a loaded machine. qemu-img info
// opens it without a key and names it luks.
func LUKS1(payload int) []byte {
	be := binary.BigEndian
	slotSectors := (luksKeyBytes*luksStripes + luksSectorSize - 1) / luksSectorSize
	slotSectors = (slotSectors + luksHeaderSector - 1) / luksHeaderSector * luksHeaderSector
	payloadSector := luksHeaderSector + 8*slotSectors
	img := make([]byte, payloadSector*luksSectorSize+payload)
	copy(img, "LUKS\xba\xbe")
	be.PutUint16(img[6:], 1)
	copy(img[8:], "aes")
	copy(img[40:], "xts-plain64")
	copy(img[72:], "sha256")
	be.PutUint32(img[104:], uint32(payloadSector))
	be.PutUint32(img[108:], luksKeyBytes)
	be.PutUint32(img[164:], 1000) // master key digest iterations
	copy(img[168:], "6a2b9f4e-0c1d-4e5f-8a7b-3c2d1e0f9a8b")
	for i := 0; i < 8; i++ {
		s := img[208+48*i:]
		be.PutUint32(s[0:], luksSlotDisabled)
		be.PutUint32(s[40:], uint32(luksHeaderSector+i*slotSectors))
		be.PutUint32(s[44:], luksStripes)
	}
	return img
}
