package kube

import (
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svc-project/svc/api"
)

func (o *VirtualMachineConfig) meta() *metav1.ObjectMeta   { return &o.ObjectMeta }
func (o *VirtualMachineConfig) typeMeta() *metav1.TypeMeta { return &o.TypeMeta }

func vmConfigResource() *resource {
	return &resource{
		plural: "virtualmachineconfigs", singular: "virtualmachineconfig", kind: "VirtualMachineConfig", shortNames: []string{"vmconfig", "vmconfigs"},
		svc: "vmconfigs", deletes: true,
		newObject: func() object { return &VirtualMachineConfig{} },
		convert: func(raw json.RawMessage) (object, bool, error) {
			var cfg api.VMConfig
			if err := json.Unmarshal(raw, &cfg); err != nil {
				return nil, false, err
			}
			return vmConfigOf(cfg), false, nil
		},
		create: createVMConfig,
	}
}

func vmConfigOf(c api.VMConfig) *VirtualMachineConfig {
	o := &VirtualMachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Annotations: map[string]string{createdBy: c.Owner}},
		Spec: VMConfigSpec{
			Image: c.Image, CPU: c.CPU, NetBoost: &c.NetBoost, LegacyIO: &c.LegacyIO, GPUPassthrough: &c.GPUPassthrough,
			TagRequired: &c.TagRequired, DisplayWidth: c.DisplayWidth, DisplayHeight: c.DisplayHeight, DisplayDPI: c.DisplayDPI,
		},
	}
	if c.CreatedAt != nil {
		o.CreationTimestamp = metav1.NewTime(*c.CreatedAt)
	}
	if c.Memory != 0 {
		o.Spec.Memory = &c.Memory
	}
	for _, f := range []struct {
		v  string
		to **string
	}{{c.ISO, &o.Spec.ISO}, {c.Tag, &o.Spec.Tag}, {c.Scheduler, &o.Spec.Scheduler}, {c.Node, &o.Spec.NodeName}} {
		if f.v != "" {
			v := f.v
			*f.to = &v
		}
	}
	return o
}

func createVMConfig(c *call, body []byte) {
	var o VirtualMachineConfig
	if err := json.Unmarshal(body, &o); err != nil {
		writeStatus(c.w, badRequest("the body is no VirtualMachineConfig: %v", err))
		return
	}
	s := o.Spec
	if st, bad := unserved(s.SystemSerial, s.VNCConsole); bad {
		writeStatus(c.w, st)
		return
	}
	cfg := api.VMConfig{
		Name: o.Name, Image: s.Image, CPU: s.CPU, DisplayWidth: s.DisplayWidth, DisplayHeight: s.DisplayHeight, DisplayDPI: s.DisplayDPI,
	}
	if s.Memory != nil {
		cfg.Memory = *s.Memory
	}
	for _, f := range []struct {
		v  *string
		to *string
	}{{s.ISO, &cfg.ISO}, {s.Tag, &cfg.Tag}, {s.Scheduler, &cfg.Scheduler}, {s.NodeName, &cfg.Node}} {
		if f.v != nil {
			*f.to = *f.v
		}
	}
	for _, f := range []struct {
		v  *bool
		to *bool
	}{{s.NetBoost, &cfg.NetBoost}, {s.LegacyIO, &cfg.LegacyIO}, {s.GPUPassthrough, &cfg.GPUPassthrough}, {s.TagRequired, &cfg.TagRequired}} {
		if f.v != nil {
			*f.to = *f.v
		}
	}
	a := c.d.call(c.r, http.MethodPost, c.path(), nil, cfg)
	if !a.ok() {
		a.passOn(c.w)
		return
	}
	var got api.VMConfig
	if err := a.decode(&got); err != nil {
		writeStatus(c.w, internal("reading the VM config: %v", err))
		return
	}
	out := vmConfigOf(got)
	c.finish(out, rv(c.d.cfg.Index()))
	writeJSON(c.w, http.StatusCreated, out)
}
