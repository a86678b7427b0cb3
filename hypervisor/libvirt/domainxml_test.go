package libvirt

import (
	"strings"
	"testing"

	"github.com/svc-project/svc/hypervisor"
)

func TestDomainXML_cases(t *testing.T) {
	base := hypervisor.Spec{Name: "svc.p.ns.vm", CPU: 2, MemoryMiB: 512, ListenAddr: "10.0.0.5", VNCPort: 5901, BaseImage: "/images/base", BaseFormat: "raw",
		Forwards: []hypervisor.Forward{{HostPort: 22001, GuestPort: 22}, {HostPort: 22002, GuestPort: 5900}}}
	cases := []struct {
		name    string
		typ     string
		mod     func(*hypervisor.Spec)
		want    []string
		notWant []string
		wantErr bool
	}{
		{name: "virtio by default", typ: TypeQEMU,
			want: []string{`<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>`, `bus='virtio'`, `virtio-net-pci,netdev=n0,bus=pci.0,addr=0x10`,
				`hostfwd=tcp:10.0.0.5:22001-:22,hostfwd=tcp:10.0.0.5:22002-:5900`, `<qemu:arg value='10.0.0.5:1'/>`, `<vcpu>2</vcpu>`, `<memory unit='MiB'>512</memory>`, `name='org.qemu.guest_agent.0'`, `<genid/>`,
				// Entropy from the host at once: a guest making its SSH host keys at boot does not wait for
				// its own random pool to fill under emulation.
				"<rng model='virtio'>\n      <backend model='random'>/dev/urandom</backend>"},
			notWant: []string{"cdrom", "host-passthrough"}},
		{name: "a hot guest's screen listens nowhere", typ: TypeQEMU, mod: func(s *hypervisor.Spec) { s.Hot, s.VNCPort, s.Forwards = true, 0, nil },
			want: []string{"<qemu:arg value='-vnc'/>\n    <qemu:arg value='none"}, notWant: []string{"hostfwd"}},
		{name: "a hot guest with forwards", typ: TypeQEMU, mod: func(s *hypervisor.Spec) { s.Hot, s.VNCPort = true, 0 }, wantErr: true},
		{name: "the whole backing chain is declared, every format pinned", typ: TypeQEMU,
			want: []string{"<driver name='qemu' type='qcow2'/>\n      <source file='/vms/d.qcow2'/>\n      <backingStore type='file'>\n        <format type='raw'/>\n        <source file='/images/base'/>\n        <backingStore/>\n      </backingStore>"}},
		{name: "a qcow2 base", typ: TypeQEMU, mod: func(s *hypervisor.Spec) { s.BaseFormat = "qcow2" }, want: []string{"<format type='qcow2'/>\n        <source file='/images/base'/>"}},
		{name: "a base of another format", typ: TypeQEMU, mod: func(s *hypervisor.Spec) { s.BaseFormat = "vmdk" }, wantErr: true},
		{name: "QEMU runs as the unprivileged user", typ: TypeQEMU,
			want: []string{"<seclabel type='static' model='dac' relabel='yes'>\n    <label>+995:+994</label>"}},
		{name: "kvm passes the host cpu", typ: TypeKVM, want: []string{`<domain type='kvm'`, `host-passthrough`}},
		{name: "legacy io", typ: TypeQEMU, mod: func(s *hypervisor.Spec) { s.LegacyIO = true }, want: []string{`bus='ide'`, `e1000,netdev=n0`}, notWant: []string{"virtio"}},
		{name: "iso", typ: TypeQEMU, mod: func(s *hypervisor.Spec) { s.ISO = "/isos/a&b.iso" },
			want: []string{`device='cdrom'`, "<driver name='qemu' type='raw'/>\n      <source file='/isos/a&amp;b.iso'/>\n      <backingStore/>", `<boot dev='cdrom'/>`}},
		{name: "reserved ports", typ: TypeQEMU, mod: func(s *hypervisor.Spec) {
			s.Forwards = append(s.Forwards, hypervisor.Forward{HostPort: 8080, GuestPort: 80})
		}, want: []string{`hostfwd=tcp:10.0.0.5:8080-:80`}},
		{name: "vnc password from a secret file", typ: TypeQEMU, mod: func(s *hypervisor.Spec) { s.VNCPassword = "pw" },
			want: []string{`secret,id=vncpw0,file=/vms/d.vnc,format=raw`, `10.0.0.5:1,password-secret=vncpw0`}, notWant: []string{"pw'"}},
		{name: "no shared folder unless asked", typ: TypeQEMU, notWant: []string{"<filesystem"}},
		{name: "a shared folder: 9p, mapped (the guest sets no host owner), written through", typ: TypeQEMU, mod: func(s *hypervisor.Spec) { s.SharedDir = "/data/shared/ns&1" },
			want: []string{"<filesystem type='mount' accessmode='mapped'>\n      <driver type='path' wrpolicy='immediate'/>\n      <source dir='/data/shared/ns&amp;1'/>\n      <target dir='svc-shared'/>"}},
		{name: "no cpu", typ: TypeQEMU, mod: func(s *hypervisor.Spec) { s.CPU = 0 }, wantErr: true},
		{name: "vnc port below the display range", typ: TypeQEMU, mod: func(s *hypervisor.Spec) { s.VNCPort = 5000 }, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := base
			s.Forwards = append([]hypervisor.Forward(nil), base.Forwards...)
			if c.mod != nil {
				c.mod(&s)
			}
			secret := ""
			if s.VNCPassword != "" {
				secret = "/vms/d.vnc"
			}
			x, err := domainXML(c.typ, s, domainFiles{disk: "/vms/d.qcow2", console: "/vms/d.log", vncSecret: secret, label: "+995:+994"})
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(x, w) {
					t.Errorf("missing %s in\n%s", w, x)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(x, w) {
					t.Errorf("unexpected %s in\n%s", w, x)
				}
			}
		})
	}
}
