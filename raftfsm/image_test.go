package raftfsm

import (
	"errors"
	"strings"
	"testing"

	"github.com/svc-project/svc/api"
)

// steps applies commands one after another at rising indexes and checks
// each one's error kind; after every step the index and a snapshot round
// trip are checked.
type step struct {
	name string
	cmd  []byte
	// lazy builds the command when the step runs (it may depend on earlier steps).
	lazy    func() []byte
	wantErr error
	check   func(t *testing.T, f *FSM)
}

func runSteps(t *testing.T, steps []step) *FSM {
	t.Helper()
	f := NewFSM(nil)
	applyAll(t, f, vmSetup(t)...)
	idx := f.Index()
	for _, s := range steps {
		idx++
		if s.lazy != nil {
			s.cmd = s.lazy()
		}
		c, err := Decode(s.cmd)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		r := f.ApplyCommand(idx, c)
		if !errors.Is(r.Err, s.wantErr) || (s.wantErr == nil && r.Err != nil) {
			t.Fatalf("%s: err = %v, want %v", s.name, r.Err, s.wantErr)
		}
		if s.check != nil {
			s.check(t, f)
		}
		roundTrip(t, f)
	}
	return f
}

const digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

func TestImage_copy_describe_delete(t *testing.T) {
	ns := api.DefaultNamespace
	desc := "copied"
	runSteps(t, []step{
		{name: "copy", cmd: mustEncode(t, TypeImageCopy, ImageCopy{Namespace: ns, Name: "mini", NewName: "mini2", Time: t0}), check: func(t *testing.T, f *FSM) {
			img, ok := f.Image(ns, "mini2")
			src, _ := f.Image(ns, "mini")
			if !ok || img.Digest != src.Digest || img.SourceType != "local" || img.Source != "mini" || img.State != ImageReady {
				t.Fatalf("copy %+v", img)
			}
		}},
		{name: "copy over a name", cmd: mustEncode(t, TypeImageCopy, ImageCopy{Namespace: ns, Name: "mini", NewName: "mini2"}), wantErr: ErrAlreadyExists},
		{name: "copy with a description", cmd: mustEncode(t, TypeImageCopy, ImageCopy{Namespace: ns, Name: "mini", NewName: "mini3", Description: &desc}), check: func(t *testing.T, f *FSM) {
			if img, _ := f.Image(ns, "mini3"); img.Description != "copied" {
				t.Fatalf("copy %+v", img)
			}
		}},
		{name: "copy of nothing", cmd: mustEncode(t, TypeImageCopy, ImageCopy{Namespace: ns, Name: "nope", NewName: "x"}), wantErr: ErrNotFound},
		{name: "copy to a bad name", cmd: mustEncode(t, TypeImageCopy, ImageCopy{Namespace: ns, Name: "mini", NewName: "a/b"}), wantErr: ErrInvalid},
		{name: "describe", cmd: mustEncode(t, TypeImageDescribe, ImageDescribe{Namespace: ns, Name: "mini2", Description: "hello"}), check: func(t *testing.T, f *FSM) {
			if img, _ := f.Image(ns, "mini2"); img.Description != "hello" {
				t.Fatalf("%+v", img)
			}
		}},
		{name: "describe too long", cmd: mustEncode(t, TypeImageDescribe, ImageDescribe{Namespace: ns, Name: "mini2", Description: strings.Repeat("x", MaxDescription+1)}), wantErr: ErrInvalid},
		{name: "a vm config uses it", cmd: mustEncode(t, TypeVMConfigCreate, VMConfigCreate{Config: VMConfig{Name: "cfg", Namespace: ns, Image: "mini2"}})},
		{name: "delete while a config uses it", cmd: mustEncode(t, TypeImageDelete, ImageDelete{Namespace: ns, Name: "mini2"}), wantErr: ErrConflict},
		{name: "config gone", cmd: mustEncode(t, TypeVMConfigDelete, VMConfigDelete{Namespace: ns, Name: "cfg"})},
		{name: "delete", cmd: mustEncode(t, TypeImageDelete, ImageDelete{Namespace: ns, Name: "mini2"}), check: func(t *testing.T, f *FSM) {
			if _, ok := f.Image(ns, "mini2"); ok || !f.BlobInUse("sha256:aa") {
				t.Fatal("the name stayed, or the content another name has was dropped")
			}
		}},
		{name: "delete the last names", cmd: mustEncode(t, TypeImageDelete, ImageDelete{Namespace: ns, Name: "mini3"})},
		{name: "delete the original", cmd: mustEncode(t, TypeImageDelete, ImageDelete{Namespace: ns, Name: "mini"}), check: func(t *testing.T, f *FSM) {
			if f.BlobInUse("sha256:aa") {
				t.Fatal("a blob nothing names is still in use")
			}
		}},
	})
}

func TestISO_create_attach_delete(t *testing.T) {
	ns := api.DefaultNamespace
	iso := Image{Name: "installer.iso", Namespace: ns, Digest: digestB, SizeBytes: 100}
	vm := func() []byte {
		return mustEncode(t, TypeVMCreate, VMCreate{VM: VM{Name: "inst", Namespace: ns, Node: "n1", Image: "mini", ImageDigest: "sha256:aa",
			VMOptions: VMOptions{CPU: 1, MemoryBytes: 1 << 30, ISO: "installer.iso"}, ISODigest: digestB, SSHPort: 22001, VNCPort: 5901, ScreensharePort: 22002}})
	}
	runSteps(t, []step{
		{name: "a vm needs the iso to exist", cmd: vm(), wantErr: ErrNotFound},
		{name: "create", cmd: mustEncode(t, TypeImageCreate, ImageCreate{Kind: KindISO, Image: iso, Holder: "n1"}), check: func(t *testing.T, f *FSM) {
			if got := f.ISOs(ns); len(got) != 1 || got[0].Name != "installer.iso" || !f.BlobInUse(digestB) {
				t.Fatalf("isos %+v", got)
			}
			if _, ok := f.Image(ns, "installer.iso"); ok {
				t.Fatal("an ISO listed as an image")
			}
		}},
		{name: "twice", cmd: mustEncode(t, TypeImageCreate, ImageCreate{Kind: KindISO, Image: iso, Holder: "n1"}), wantErr: ErrAlreadyExists},
		{name: "attached to a vm", cmd: vm()},
		{name: "delete while a vm uses it", cmd: mustEncode(t, TypeImageDelete, ImageDelete{Kind: KindISO, Namespace: ns, Name: "installer.iso"}), wantErr: ErrConflict},
		{name: "vm gone", cmd: mustEncode(t, TypeVMDelete, VMDelete{Namespace: ns, Name: "inst"})},
		{name: "delete", cmd: mustEncode(t, TypeImageDelete, ImageDelete{Kind: KindISO, Namespace: ns, Name: "installer.iso"}), check: func(t *testing.T, f *FSM) {
			if len(f.ISOs(ns)) != 0 || f.BlobInUse(digestB) {
				t.Fatal("still there")
			}
		}},
		{name: "unknown kind", cmd: mustEncode(t, TypeImageDelete, ImageDelete{Kind: "floppy", Namespace: ns, Name: "x"}), wantErr: ErrInvalid},
	})
}

// A commit moves the image's name to the new content, restarts the VM on
// it and leaves other VMs on the old content; a save makes a new image; a
// failure keeps the old content; reports of an operation not under way are
// refused.
func TestVMImageOp_commit_save_fail(t *testing.T) {
	ns := api.DefaultNamespace
	desc := "after commit"
	op := func(kind, image string) []byte {
		return mustEncode(t, TypeVMImageOp, VMImageOp{Namespace: ns, VM: "a", Kind: kind, Image: image, Description: &desc, Time: t0})
	}
	var opID uint64
	noteOp := func(t *testing.T, f *FSM) {
		vm, _ := f.VM(ns, "a")
		if vm.PendingOp == nil {
			t.Fatal("no operation under way")
		}
		opID = vm.PendingOp.ID
	}
	done := func(id func() uint64, node string) func() []byte {
		return func() []byte {
			return mustEncode(t, TypeVMImageOpDone, VMImageOpDone{Namespace: ns, VM: "a", ID: id(), Node: node, Digest: digestB, SizeBytes: 9, VirtualSize: 99, Format: "qcow2"})
		}
	}
	var revertGen int64
	runSteps(t, []step{
		{name: "vm a", cmd: vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)},
		{name: "vm b", cmd: vmCreateCmd(t, "b", "n1", 1, 1<<30, 22011)},
		{name: "commit", cmd: op(OpCommit, ""), check: func(t *testing.T, f *FSM) {
			noteOp(t, f)
			if img, _ := f.Image(ns, "mini"); img.State != ImageUpdating || img.Digest != "sha256:aa" || img.Description != desc {
				t.Fatalf("image %+v", img)
			}
			vm, _ := f.VM(ns, "a")
			revertGen = vm.RevertGen
		}},
		{name: "a second one while the first runs", cmd: op(OpSave, "other"), wantErr: ErrConflict},
		{name: "the image cannot go meanwhile", cmd: mustEncode(t, TypeImageDelete, ImageDelete{Namespace: ns, Name: "mini"}), wantErr: ErrConflict},
		{name: "a report from another node", lazy: done(func() uint64 { return opID }, "n9"), wantErr: ErrConflict},
		{name: "a report of another operation", lazy: done(func() uint64 { return opID + 100 }, "n1"), wantErr: ErrNotFound},
		{name: "done", lazy: done(func() uint64 { return opID }, "n1"), check: func(t *testing.T, f *FSM) {
			img, _ := f.Image(ns, "mini")
			a, _ := f.VM(ns, "a")
			b, _ := f.VM(ns, "b")
			if img.State != ImageReady || img.Digest != digestB || img.VirtualSize != 99 {
				t.Fatalf("image %+v", img)
			}
			if a.ImageDigest != digestB || a.PendingOp != nil || a.RevertGen != revertGen+1 {
				t.Fatalf("the committed vm %+v", a)
			}
			if b.ImageDigest != "sha256:aa" || !f.BlobInUse("sha256:aa") {
				t.Fatalf("another vm lost its content: %+v", b)
			}
			if blob, ok := f.Blob(digestB); !ok || blob.Holders[0] != "n1" {
				t.Fatalf("blob %+v", blob)
			}
		}},
		{name: "done twice", lazy: done(func() uint64 { return opID }, "n1"), wantErr: ErrNotFound},
		{name: "save over a taken name", cmd: op(OpSave, "mini"), wantErr: ErrAlreadyExists},
		{name: "save to a bad name", cmd: op(OpSave, "a/b"), wantErr: ErrInvalid},
		{name: "save", cmd: op(OpSave, "saved"), check: func(t *testing.T, f *FSM) {
			noteOp(t, f)
			if img, ok := f.Image(ns, "saved"); !ok || img.State != ImageUpdating || img.Usable() || img.SourceType != "vm" || img.Source != "a" {
				t.Fatalf("saved %+v", img)
			}
		}},
		{name: "a failure report of no operation", cmd: mustEncode(t, TypeVMImageOpFailed, VMImageOpFailed{Namespace: ns, VM: "a", ID: 0, Node: "n1", Error: "x"}), wantErr: ErrNotFound},
		{name: "the save fails", lazy: func() []byte {
			return mustEncode(t, TypeVMImageOpFailed, VMImageOpFailed{Namespace: ns, VM: "a", ID: opID, Node: "n1", Error: "disk full"})
		}, check: func(t *testing.T, f *FSM) {
			img, _ := f.Image(ns, "saved")
			if vm, _ := f.VM(ns, "a"); img.State != ImageFailed || vm.PendingOp != nil || !strings.Contains(img.ErrorMessage, "disk full") {
				t.Fatalf("saved %+v", img)
			}
		}},
	})
	// A VM deleted while its operation runs leaves no image Updating, and the
	// host's late report is refused.
	runSteps(t, []step{
		{name: "vm a", cmd: vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)},
		{name: "commit", cmd: op(OpCommit, ""), check: noteOp},
		{name: "vm deleted", cmd: mustEncode(t, TypeVMDelete, VMDelete{Namespace: ns, Name: "a"}), check: func(t *testing.T, f *FSM) {
			if img, _ := f.Image(ns, "mini"); img.State != ImageFailed || img.Digest != "sha256:aa" || !strings.Contains(img.ErrorMessage, "deleted") {
				t.Fatalf("image %+v", img)
			}
		}},
		{name: "the late report", lazy: done(func() uint64 { return opID }, "n1"), wantErr: ErrNotFound},
		{name: "vm a again", cmd: vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)},
		{name: "save", cmd: op(OpSave, "saved"), check: noteOp},
		{name: "deleted during the save", cmd: mustEncode(t, TypeVMDelete, VMDelete{Namespace: ns, Name: "a"}), check: func(t *testing.T, f *FSM) {
			if img, _ := f.Image(ns, "saved"); img.State != ImageFailed || img.Usable() {
				t.Fatalf("saved %+v", img)
			}
		}},
		{name: "the failed save can go", cmd: mustEncode(t, TypeImageDelete, ImageDelete{Namespace: ns, Name: "saved"})},
	})
	// The failure names the operation it ends.
	f := runSteps(t, []step{
		{name: "vm a", cmd: vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)},
		{name: "commit", cmd: op(OpCommit, ""), check: noteOp},
	})
	r := f.ApplyCommand(f.Index()+1, mustDecode(t, mustEncode(t, TypeVMImageOpFailed, VMImageOpFailed{Namespace: ns, VM: "a", ID: opID, Node: "n1", Error: "disk full"})))
	img, _ := f.Image(ns, "mini")
	vm, _ := f.VM(ns, "a")
	if r.Err != nil || img.State != ImageFailed || !strings.Contains(img.ErrorMessage, "disk full") || img.Digest != "sha256:aa" || vm.PendingOp != nil {
		t.Fatalf("after a failure: %v, image %+v, vm op %+v", r.Err, img, vm.PendingOp)
	}
}

func mustDecode(t testing.TB, b []byte) Command {
	t.Helper()
	c, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestImageCreate_fromRegistry(t *testing.T) {
	ns := api.DefaultNamespace
	const digestC = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	pulled := func(name, source, digest string) Image {
		return Image{Name: name, Namespace: ns, Digest: digest, Format: "raw", SourceType: SourceRegistry, Source: source, SizeBytes: 1}
	}
	create := func(img Image, holder string, from bool) []byte {
		return mustEncode(t, TypeImageCreate, ImageCreate{Image: img, Holder: holder, FromRegistry: from})
	}
	holders := func(f *FSM, d string) []string { b, _ := f.Blob(d); return b.Holders }
	runSteps(t, []step{
		{name: "first pull", cmd: create(pulled("ubuntu-22", "r.test/ubuntu:22@sha256:01", digestB), "node-a", true)},
		{name: "same content on another peer", cmd: create(pulled("ubuntu-22", "r.test/ubuntu:22@sha256:01", digestB), "node-b", true), check: func(t *testing.T, f *FSM) {
			if h := holders(f, digestB); len(h) != 2 {
				t.Fatalf("holders %v", h)
			}
		}},
		{name: "the tag moved", cmd: create(pulled("ubuntu-22", "r.test/ubuntu:22@sha256:02", digestC), "node-a", true), check: func(t *testing.T, f *FSM) {
			img, _ := f.Image(ns, "ubuntu-22")
			if img.Digest != digestC || img.Source != "r.test/ubuntu:22@sha256:02" || f.BlobInUse(digestB) {
				t.Fatalf("%+v; old content in use %v", img, f.BlobInUse(digestB))
			}
		}},
		{name: "another reference under the name", cmd: create(pulled("ubuntu-22", "r.test/other:22@sha256:03", digestB), "node-a", true), wantErr: ErrAlreadyExists},
		{name: "without FromRegistry", cmd: create(pulled("ubuntu-22", "r.test/ubuntu:22@sha256:04", digestB), "node-a", false), wantErr: ErrAlreadyExists},
		{name: "over an uploaded image", cmd: create(pulled("mini", "r.test/mini:1@sha256:05", digestB), "node-a", true), wantErr: ErrAlreadyExists},
	})
}

// A digest names bytes, never a right to them: a record that received no
// bytes may point only at content its namespace has already (its disk and
// its NVRAM), whatever other namespace holds a blob of that digest.
func TestImageCreate_proof(t *testing.T) {
	ns := api.DefaultNamespace
	const digestN = "sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
	img := func(ns, name, digest, nvram string) Image {
		return Image{Name: name, Namespace: ns, Digest: digest, NVRAMDigest: nvram, Format: "raw", SourceType: SourceRegistry, Source: "r.test/" + name + ":1@sha256:01", SizeBytes: 1}
	}
	create := func(i Image, holder, proof string) []byte {
		return mustEncode(t, TypeImageCreate, ImageCreate{Image: i, Holder: holder, FromRegistry: true, Proof: proof})
	}
	readable := func(ns, d string, want bool) func(t *testing.T, f *FSM) {
		return func(t *testing.T, f *FSM) {
			if got := f.NamespaceHolds(ns, d); got != want {
				t.Fatalf("NamespaceHolds(%s, %s) = %v, want %v", ns, d, got, want)
			}
		}
	}
	runSteps(t, []step{
		{name: "team-a's private image", cmd: mustEncode(t, TypeNamespaceCreate, NamespaceCreate{Name: "team-a"})},
		{name: "received in team-a", cmd: create(img("team-a", "secret", digestB, ""), "n1", ProofReceived), check: readable("team-a", digestB, true)},
		{name: "claimed in the default namespace", cmd: create(img(ns, "steal-x", digestB, ""), "", ProofNamespace), wantErr: ErrInvalid,
			check: readable(ns, digestB, false)},
		{name: "received without a holder", cmd: create(img(ns, "steal-y", digestB, ""), "", ProofReceived), wantErr: ErrInvalid},
		{name: "an unknown proof", cmd: create(img(ns, "steal-z", digestB, ""), "n1", "trust-me"), wantErr: ErrInvalid},
		{name: "received in the default namespace", cmd: create(img(ns, "pulled", digestB, ""), "n2", ProofReceived), check: readable(ns, digestB, true)},
		{name: "a second name by namespace", cmd: create(img(ns, "again", digestB, ""), "", ProofNamespace)},
		{name: "an NVRAM the namespace has not", cmd: create(img(ns, "mac", digestB, digestN), "", ProofNamespace), wantErr: ErrInvalid},
		{name: "every name of it deleted", cmd: mustEncode(t, TypeImageDelete, ImageDelete{Namespace: ns, Name: "pulled"})},
		{name: "the last name deleted", cmd: mustEncode(t, TypeImageDelete, ImageDelete{Namespace: ns, Name: "again"}), check: readable(ns, digestB, false)},
		{name: "claimed again after", cmd: create(img(ns, "again", digestB, ""), "", ProofNamespace), wantErr: ErrInvalid},
		{name: "written before proofs existed", cmd: create(img(ns, "old", digestB, ""), "n1", "")},
	})
}

// A VM deployed from a registry reference names an image not recorded yet;
// its host may then record the blob it pulled (the name went elsewhere)
// with BlobAddHolder, which creates no record for a digest nothing uses.
func TestBlobAddHolder_referenced_digest(t *testing.T) {
	ns := api.DefaultNamespace
	const digestD = "sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
	runSteps(t, []step{
		{name: "an unreferenced digest", cmd: mustEncode(t, TypeBlobAddHolder, BlobAddHolder{Digest: digestD, Node: "n1", SizeBytes: 9}), wantErr: ErrNotFound},
		{name: "an image reference without its source", cmd: mustEncode(t, TypeVMCreate, VMCreate{VM: VM{Name: "v0", Namespace: ns, Node: "n1", Image: "pulled",
			ImageDigest: digestD, VMOptions: VMOptions{CPU: 1, MemoryBytes: 1 << 20}, IP: "10.0.0.1", SSHPort: 20000, VNCPort: 5900, ScreensharePort: 20001, CreatedAt: t0}}), wantErr: ErrNotFound},
		{name: "a VM from a reference", cmd: mustEncode(t, TypeVMCreate, VMCreate{VM: VM{Name: "v1", Namespace: ns, Node: "n1", Image: "pulled", ImageSource: "r.test/x:1@sha256:01",
			ImageDigest: digestD, VMOptions: VMOptions{CPU: 1, MemoryBytes: 1 << 20}, IP: "10.0.0.1", SSHPort: 20000, VNCPort: 5900, ScreensharePort: 20001, CreatedAt: t0}})},
		{name: "its host holds the blob", cmd: mustEncode(t, TypeBlobAddHolder, BlobAddHolder{Digest: digestD, Node: "n1", SizeBytes: 9}), check: func(t *testing.T, f *FSM) {
			if b, ok := f.Blob(digestD); !ok || b.SizeBytes != 9 || len(b.Holders) != 1 || !f.BlobInUse(digestD) {
				t.Fatalf("blob %+v %v", b, ok)
			}
		}},
	})
}
