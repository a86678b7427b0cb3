package hypervisor

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"text/template"
)

// domainXML renders the libvirt domain of a spec. Networking is QEMU's
// user-mode stack with host forwards, passed through qemu:commandline: the
// guest is reached at the node's address on the forwarded ports.
// vncSecretID names the QEMU secret object holding the VNC password.
const vncSecretID = "vncpw0"

func domainXML(domainType string, s Spec, disk, consoleLog, vncSecret string) (string, error) {
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
	if s.VNCPort < 5900 || s.VNCPort > 65535 {
		return "", fmt.Errorf("domain %s: VNC port %d is not 5900-65535", s.Name, s.VNCPort)
	}
	// VNC goes straight to QEMU (display = port - 5900) rather than through
	// libvirt's <graphics>: libvirt reserves VNC port numbers across all
	// addresses, so peers sharing one libvirtd on different addresses would
	// collide on equal ports.
	vnc := fmt.Sprintf("%s:%d", s.ListenAddr, s.VNCPort-5900)
	// The password comes from a file only root reads, never from the command
	// line (which every user of the host can see).
	secret := ""
	if vncSecret != "" {
		if strings.Contains(vncSecret, ",") {
			return "", fmt.Errorf("domain %s: the VNC secret's path %q holds a comma", s.Name, vncSecret)
		}
		secret = "secret,id=" + vncSecretID + ",file=" + vncSecret + ",format=raw"
		vnc += ",password-secret=" + vncSecretID
	}
	data := struct {
		Type, Disk, Console, Netdev, NIC, VNC, Secret string
		Spec
	}{domainType, disk, consoleLog, netdev, nic, vnc, secret, s}
	var buf bytes.Buffer
	if err := domainTmpl.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("domain %s: %w", s.Name, err)
	}
	return buf.String(), nil
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
  <name>{{x .Name}}</name>
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
      <target dev='{{if .LegacyIO}}hda{{else}}vda{{end}}' bus='{{if .LegacyIO}}ide{{else}}virtio{{end}}'/>
    </disk>{{if .ISO}}
    <disk type='file' device='cdrom'>
      <driver name='qemu' type='raw'/>
      <source file='{{x .ISO}}'/>
      <target dev='hdc' bus='ide'/>
      <readonly/>
    </disk>{{end}}
    <video><model type='vga'/></video>
    <serial type='file'>
      <source path='{{x .Console}}'/>
      <target port='0'/>
    </serial>
    <memballoon model='none'/>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-netdev'/>
    <qemu:arg value='{{x .Netdev}}'/>
    <qemu:arg value='-device'/>
    <qemu:arg value='{{x .NIC}}'/>
{{- if .Secret}}
    <qemu:arg value='-object'/>
    <qemu:arg value='{{x .Secret}}'/>{{end}}
    <qemu:arg value='-vnc'/>
    <qemu:arg value='{{x .VNC}}'/>
  </qemu:commandline>
</domain>
`))
