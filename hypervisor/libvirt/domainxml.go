package libvirt

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"text/template"

	"github.com/svc-project/svc/hypervisor"
)

// domainXML renders the libvirt domain of a spec. Networking is QEMU's
// user-mode stack with host forwards, passed through qemu:commandline: the
// guest is reached at the node's address on the forwarded ports. Every
// disk's format is pinned and its whole backing chain declared (the
// overlay svc made, on the base image, on nothing), so that QEMU never
// probes a format or follows a name from an image's header; and QEMU runs
// as an unprivileged user (the DAC label), whatever qemu.conf says.
// vncSecretID names the QEMU secret object holding the VNC password.
const vncSecretID = "vncpw0"

// domainFiles are the host files of a domain and the DAC label (user and
// group) its QEMU runs as.
type domainFiles struct {
	disk, console, vncSecret, label string
	// uuid, when set, is the domain's UUID (a domain restored from another's
	// memory file keeps the one it was restored with).
	uuid string
}

func domainXML(domainType string, s hypervisor.Spec, f domainFiles) (string, error) {
	if s.CPU < 1 || s.MemoryMiB < 1 {
		return "", fmt.Errorf("domain %s: cpu and memory must be positive", s.Name)
	}
	var fwd []string
	for _, f := range s.Forwards {
		fwd = append(fwd, fmt.Sprintf("hostfwd=tcp:%s:%d-:%d", s.ListenAddr, f.HostPort, f.GuestPort))
	}
	netdev := "user,id=n0"
	if len(fwd) > 0 {
		netdev += "," + strings.Join(fwd, ",")
	}
	nic := "virtio-net-pci,netdev=n0,bus=pci.0,addr=0x10"
	if s.LegacyIO {
		nic = "e1000,netdev=n0,bus=pci.0,addr=0x10"
	}
	if s.VNCPort != 0 && (s.VNCPort < 5900 || s.VNCPort > 65535) {
		return "", fmt.Errorf("domain %s: VNC port %d is not 5900-65535", s.Name, s.VNCPort)
	}
	// VNC goes straight to QEMU (display = port - 5900) rather than through
	// libvirt's <graphics>: libvirt reserves VNC port numbers across all
	// addresses, so peers sharing one libvirtd on different addresses would
	// collide on equal ports. Port 0 is a guest without a screen (a
	// template being built).
	vnc := ""
	switch {
	case s.VNCPort != 0:
		vnc = fmt.Sprintf("%s:%d", s.ListenAddr, s.VNCPort-5900)
	case s.Hot:
		// A hot guest's screen exists and listens nowhere until a claim
		// opens it (QMP display-update, ClaimHot).
		vnc = "none"
	}
	if s.Hot && len(s.Forwards) > 0 {
		return "", fmt.Errorf("domain %s: a hot guest has no forwards until it is claimed", s.Name)
	}
	// The password comes from a file only root reads, never from the command
	// line (which every user of the host can see).
	secret := ""
	if f.vncSecret != "" && vnc != "" {
		if strings.Contains(f.vncSecret, ",") {
			return "", fmt.Errorf("domain %s: the VNC secret's path %q holds a comma", s.Name, f.vncSecret)
		}
		secret = "secret,id=" + vncSecretID + ",file=" + f.vncSecret + ",format=raw"
		vnc += ",password-secret=" + vncSecretID
	}
	if f.label == "" {
		return "", fmt.Errorf("domain %s: no user to run QEMU as", s.Name)
	}
	baseFormat := s.BaseFormat
	if baseFormat == "" {
		baseFormat = "qcow2"
	}
	if baseFormat != "qcow2" && baseFormat != "raw" {
		return "", fmt.Errorf("domain %s: base format %q is not qcow2 or raw", s.Name, baseFormat)
	}
	data := struct {
		Type, Disk, BaseFormat, Console, Netdev, NIC, VNC, Secret, Label, UUID, SharedTag string
		hypervisor.Spec
	}{domainType, f.disk, baseFormat, f.console, netdev, nic, vnc, secret, f.label, f.uuid, hypervisor.SharedTag, s}
	var buf bytes.Buffer
	if err := domainTmpl.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("domain %s: %w", s.Name, err)
	}
	return buf.String(), nil
}

// commandLine returns the <qemu:commandline> element of a domain's XML:
// everything of a domain that is not the guest's hardware (its network's
// host side, its screen), which a restore may change.
func commandLine(domain string) (string, error) {
	start := strings.Index(domain, "<qemu:commandline>")
	end := strings.Index(domain, "</qemu:commandline>")
	if start < 0 || end < start {
		return "", fmt.Errorf("the domain has no qemu:commandline")
	}
	return domain[start : end+len("</qemu:commandline>")], nil
}

func xmlEscape(v any) string {
	var b strings.Builder
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int:
		s = strconv.Itoa(x)
	default:
		s = fmt.Sprint(x)
	}
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

var domainTmpl = template.Must(template.New("domain").Funcs(template.FuncMap{"x": xmlEscape}).Parse(`<domain type='{{x .Type}}' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>{{x .Name}}</name>{{if .UUID}}
  <uuid>{{x .UUID}}</uuid>{{end}}
  <genid/>
  <memory unit='MiB'>{{.MemoryMiB}}</memory>
  <vcpu>{{.CPU}}</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <boot dev='hd'/>{{if .ISO}}
    <boot dev='cdrom'/>{{end}}
  </os>
  <features><acpi/><apic/></features>{{if eq .Type "kvm"}}
  <cpu mode='host-passthrough'/>{{end}}
  <clock offset='utc'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2'/>
      <source file='{{x .Disk}}'/>
      <backingStore type='file'>
        <format type='{{x .BaseFormat}}'/>
        <source file='{{x .BaseImage}}'/>
        <backingStore/>
      </backingStore>
      <target dev='{{if .LegacyIO}}hda{{else}}vda{{end}}' bus='{{if .LegacyIO}}ide{{else}}virtio{{end}}'/>
    </disk>{{if .ISO}}
    <disk type='file' device='cdrom'>
      <driver name='qemu' type='raw'/>
      <source file='{{x .ISO}}'/>
      <backingStore/>
      <target dev='hdc' bus='ide'/>
      <readonly/>
    </disk>{{end}}
    <video><model type='vga'/></video>
    <serial type='file'>
      <source path='{{x .Console}}'/>
      <target port='0'/>
    </serial>
{{- if not .LegacyIO}}
    <channel type='unix'>
      <target type='virtio' name='org.qemu.guest_agent.0'/>
    </channel>{{end}}
{{- if .SharedDir}}
    <filesystem type='mount' accessmode='mapped'>
      <driver type='path' wrpolicy='immediate'/>
      <source dir='{{x .SharedDir}}'/>
      <target dir='{{x .SharedTag}}'/>
    </filesystem>{{end}}
    <memballoon model='none'/>
{{- if not .LegacyIO}}
    <rng model='virtio'>
      <backend model='random'>/dev/urandom</backend>
    </rng>{{end}}
  </devices>
  <seclabel type='static' model='dac' relabel='yes'>
    <label>{{x .Label}}</label>
  </seclabel>
  <qemu:commandline>
    <qemu:arg value='-netdev'/>
    <qemu:arg value='{{x .Netdev}}'/>
    <qemu:arg value='-device'/>
    <qemu:arg value='{{x .NIC}}'/>
{{- if .Secret}}
    <qemu:arg value='-object'/>
    <qemu:arg value='{{x .Secret}}'/>{{end}}
{{- if .VNC}}
    <qemu:arg value='-vnc'/>
    <qemu:arg value='{{x .VNC}}'/>{{end}}
  </qemu:commandline>
</domain>
`))
