package kube

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/svc-project/svc/api"
)

// Annotations and labels of Orka's objects the door fills in.
const (
	createdBy = "orka.macstadium.com/created-by"
	archLabel = "kubernetes.io/arch"
)

func (o *VirtualMachineInstance) meta() *metav1.ObjectMeta   { return &o.ObjectMeta }
func (o *VirtualMachineInstance) typeMeta() *metav1.TypeMeta { return &o.TypeMeta }

func vmiResource() *resource {
	return &resource{
		plural: "virtualmachineinstances", singular: "virtualmachineinstance", kind: "VirtualMachineInstance", shortNames: []string{"vm", "vms"},
		svc: "vms", watches: true, deletes: true,
		newObject: func() object { return &VirtualMachineInstance{} },
		convert: func(raw json.RawMessage) (object, bool, error) {
			var vm api.VM
			if err := json.Unmarshal(raw, &vm); err != nil {
				return nil, false, err
			}
			return vmiOf(vm), false, nil
		},
		create: createVMI,
	}
}

// vmiOf is a VM as a VirtualMachineInstance. Its status's ip and hostIP
// are both the address its ports are reached at (the node's): svc's
// guests sit behind their node's ports, and Orka's clients connect to ip
// when it is set.
func vmiOf(vm api.VM) *VirtualMachineInstance {
	o := &VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{
			Name: vm.Name, UID: uid("vm", vm.UID), CreationTimestamp: metav1.NewTime(vm.DeployDate),
			Annotations: map[string]string{createdBy: vm.Owner},
		},
		Spec: VMISpec{
			Image: vm.Image, CPU: vm.CPU, ReservedPorts: vm.ReservedPorts, CustomVMMetadata: vm.CustomMetadata,
			LegacyIO: &vm.LegacyIO, GPUPassthrough: &vm.GPUPassthrough,
		},
		Status: VMIStatus{
			Phase: vm.Status, Memory: vm.Memory, NodeName: vm.Node, HostIP: vm.IP, IP: vm.IP,
			PortWarnings: strings.Join(vm.PortWarnings, "; "), StartTime: vm.DeployDate.Unix(), ErrorMessage: vm.ErrorMessage,
		},
	}
	if vm.Type != "" {
		o.Labels = map[string]string{archLabel: vm.Type}
	}
	if vm.Node != "" {
		node := vm.Node
		o.Spec.NodeName = &node
	}
	if vm.ISO != "" {
		iso := vm.ISO
		o.Spec.ISO = &iso
	}
	if b, err := api.ParseSize(vm.Memory); err == nil && b > 0 {
		gib := float64(b) / (1 << 30)
		o.Spec.Memory = &gib
	}
	for _, p := range []struct {
		port int
		to   **int
	}{{vm.SSH, &o.Status.SSHPort}, {vm.VNC, &o.Status.VNCPort}, {vm.Screenshare, &o.Status.ScreenSharePort}} {
		if p.port > 0 {
			v := p.port
			*p.to = &v
		}
	}
	return o
}

// uid is the Kubernetes UID of a record of kind with svc's UID.
func uid(kind string, id uint64) types.UID {
	if id == 0 {
		return ""
	}
	return types.UID(kind + "-" + strconv.FormatUint(id, 10))
}

// createVMI deploys the VM a VirtualMachineInstance asks for and answers
// it once placed (Pending), as Orka does; its status follows through get
// and watch.
func createVMI(c *call, body []byte) {
	var o VirtualMachineInstance
	if err := json.Unmarshal(body, &o); err != nil {
		writeStatus(c.w, badRequest("the body is no VirtualMachineInstance: %v", err))
		return
	}
	s := o.Spec
	if st, bad := unserved(s.SystemSerial, s.VNCConsole); bad {
		writeStatus(c.w, st)
		return
	}
	req := api.DeployRequest{
		Image: s.Image, Name: o.Name, ShouldGenerateName: o.Name == "" && o.GenerateName != "",
		Memory: s.Memory, TagRequired: s.TagRequired, GPUPassthrough: s.GPUPassthrough, ReservedPorts: s.ReservedPorts,
		CustomMetadata: s.CustomVMMetadata, NetBoost: s.NetBoost, LegacyIO: s.LegacyIO,
	}
	if s.CPU != 0 {
		req.CPU = &s.CPU
	}
	for _, f := range []struct {
		from *string
		to   *string
	}{{s.NodeName, &req.Node}, {s.Tag, &req.Tag}, {s.Scheduler, &req.Scheduler}, {s.ISO, &req.ISO}} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
	for _, f := range []struct {
		from int
		to   **int
	}{{s.DisplayWidth, &req.DisplayWidth}, {s.DisplayHeight, &req.DisplayHeight}, {s.DisplayDPI, &req.DisplayDPI}} {
		if f.from != 0 {
			v := f.from
			*f.to = &v
		}
	}
	a := c.d.call(c.r, http.MethodPost, c.path(), url.Values{"wait": {"false"}}, req)
	if !a.ok() {
		a.passOn(c.w)
		return
	}
	version := rv(c.d.cfg.Index()) // the replica has the caller's write
	var vm api.VM
	if err := a.decode(&vm); err != nil {
		writeStatus(c.w, internal("reading the deployed VM: %v", err))
		return
	}
	out := vmiOf(vm)
	c.finish(out, version)
	writeJSON(c.w, http.StatusCreated, out)
}

// unserved refuses the settings of Orka's specs svc cannot honour: a
// custom serial number, and a VM without its VNC screen.
func unserved(serial *string, vnc *bool) (api.Status, bool) {
	switch {
	case serial != nil && *serial != "":
		return badRequest("spec.systemSerial: svc's VMs take no custom serial number"), true
	case vnc != nil && !*vnc:
		return badRequest("spec.vncConsole: false is not served: every svc VM has its VNC screen (behind its password)"), true
	}
	return api.Status{}, false
}
