package libvirt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const savedXML = `<domain type='qemu'>
  <name>svc.p.tpl.k1</name>
  <uuid>06109636-3ab6-4f1f-95c9-bc4619ed8076</uuid>
  <genid>aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee</genid>
  <disk><source file='/d/svc.p.tpl.k1.qcow2'/></disk>
  <serial><source path='/d/svc.p.tpl.k1.console.log'/></serial>
  <console><source path='/d/svc.p.tpl.k1.console.log'/></console>
  <qemu:commandline>
    <qemu:arg value='user,id=n0,hostfwd=tcp:127.0.0.1:41000-:22'/>
  </qemu:commandline>
</domain>`

// writeSaveFile writes a save file as libvirt lays it out.
func writeSaveFile(t *testing.T, path string, mutate func(*saveHeader), xml string, cookie string, stream []byte) {
	t.Helper()
	data := make([]byte, len(xml)+1+len(cookie)+1+65536)
	copy(data, xml)
	h := saveHeader{Version: 2, DataLen: uint32(len(data)), WasRunning: 1}
	copy(h.Magic[:], saveMagic)
	if cookie != "" {
		h.CookieOffset = uint32(len(xml) + 1)
		copy(data[h.CookieOffset:], cookie)
	}
	if mutate != nil {
		mutate(&h)
	}
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, h)
	b.Write(data)
	b.Write(stream)
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRestoreFile_renames_keeps_cookie_and_stream(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "t.state"), filepath.Join(dir, "v.restore")
	stream := bytes.Repeat([]byte("QEVM-stream-"), 100000)
	const cookie = "<cookie><slirpHelper/></cookie>\n"
	writeSaveFile(t, src, nil, savedXML, cookie, stream)
	img, err := readSaveImage(src)
	if err != nil {
		t.Fatal(err)
	}
	own := "<domain><qemu:commandline>\n    <qemu:arg value='user,id=n0,hostfwd=tcp:10.0.0.2:20001-:22'/>\n  </qemu:commandline></domain>"
	x, err := restoredXML(img.xml, own, "svc.p.tpl.k1", "svc.p.ns.vm-longer-name", "11111111-2222-4333-8444-555555555555", [][2]string{
		{"/d/svc.p.tpl.k1.qcow2", "/d/svc.p.ns.vm-longer-name.qcow2"}, {"/d/svc.p.tpl.k1.console.log", "/d/svc.p.ns.vm-longer-name.console.log"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<name>svc.p.ns.vm-longer-name</name>", "<uuid>11111111-2222-4333-8444-555555555555</uuid>", "hostfwd=tcp:10.0.0.2:20001-:22", "'/d/svc.p.ns.vm-longer-name.qcow2'"} {
		if !strings.Contains(x, want) {
			t.Fatalf("restored XML lacks %q:\n%s", want, x)
		}
	}
	if strings.Contains(x, "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee") || !genidElement.MatchString(x) {
		t.Fatalf("the restored VM keeps the template's generation ID, or has none:\n%s", x)
	}
	if err := writeRestoreFile(context.Background(), src, img, x, dst); err != nil {
		t.Fatal(err)
	}
	got, err := readSaveImage(dst)
	if err != nil {
		t.Fatal(err)
	}
	if got.xml != x || string(got.cookie) != cookie+"\x00" || got.hdr.DataLen != img.hdr.DataLen || got.size != img.size {
		t.Fatalf("restore file: xml %q cookie %q data %d/%d size %d/%d", got.xml, got.cookie, got.hdr.DataLen, img.hdr.DataLen, got.size, img.size)
	}
	b, _ := os.ReadFile(dst)
	if !bytes.Equal(b[len(b)-len(stream):], stream) {
		t.Fatal("the stream changed")
	}
	if err := writeRestoreFile(context.Background(), src, img, x, dst); !errors.Is(err, os.ErrExist) {
		t.Fatalf("over an existing file: %v", err)
	}
}

func TestReadSaveImage_refusals(t *testing.T) {
	stream := []byte("stream")
	for _, tc := range []struct {
		name   string
		mutate func(*saveHeader)
		xml    string
	}{
		{"partial save", func(h *saveHeader) { copy(h.Magic[:], "LibvirtQemudPart") }, savedXML},
		{"compressed", func(h *saveHeader) { h.Compressed = 1 }, savedXML},
		{"old version", func(h *saveHeader) { h.Version = 1 }, savedXML},
		{"data past the end", func(h *saveHeader) { h.DataLen = 1 << 30 }, savedXML},
		{"cookie past the data", func(h *saveHeader) { h.CookieOffset = h.DataLen + 1 }, savedXML},
		{"no xml", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s")
			writeSaveFile(t, path, tc.mutate, tc.xml, "", stream)
			if _, err := readSaveImage(path); !errors.Is(err, errBadSaveImage) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestRestoredXML_refusals(t *testing.T) {
	own := "<qemu:commandline></qemu:commandline>"
	paths := [][2]string{{"/d/svc.p.tpl.k1.qcow2", "/d/v.qcow2"}, {"/d/svc.p.tpl.k1.console.log", "/d/v.console.log"}}
	for _, tc := range []struct {
		name, saved, from string
		paths             [][2]string
	}{
		{"another domain's file", savedXML, "svc.p.tpl.other", paths},
		{"a path it lacks", savedXML, "svc.p.tpl.k1", append(paths, [2]string{"/d/nvram", "/d/v.nvram"})},
		{"a file svc does not know", strings.Replace(savedXML, "</domain>", "<x file='/d/svc.p.tpl.k1.extra'/></domain>", 1), "svc.p.tpl.k1", paths},
		{"no uuid", strings.Replace(savedXML, "<uuid>06109636-3ab6-4f1f-95c9-bc4619ed8076</uuid>", "", 1), "svc.p.tpl.k1", paths},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := restoredXML(tc.saved, own, tc.from, "v", "11111111-2222-4333-8444-555555555555", tc.paths); !errors.Is(err, errBadSaveImage) {
				t.Fatalf("got %v", err)
			}
		})
	}
}
