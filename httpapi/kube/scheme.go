package kube

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The lists of the door's kinds, for Go clients' schemes.
type (
	VirtualMachineInstanceList list[VirtualMachineInstance]
	ImageList                  list[Image]
	VirtualMachineConfigList   list[VirtualMachineConfig]
	OrkaNodeList               list[OrkaNode]
)

// AddToScheme registers the door's kinds and lists under group (OrkaGroup
// or SvcGroup), version v1, for a client-go or controller-runtime client.
func AddToScheme(s *runtime.Scheme, group string) error {
	gv := schema.GroupVersion{Group: group, Version: Version}
	s.AddKnownTypes(gv,
		&VirtualMachineInstance{}, &VirtualMachineInstanceList{}, &Image{}, &ImageList{},
		&VirtualMachineConfig{}, &VirtualMachineConfigList{}, &OrkaNode{}, &OrkaNodeList{})
	metav1.AddToGroupVersion(s, gv)
	return nil
}

// deepCopy copies an object through its JSON (every field has one).
func deepCopy[T any](in *T) *T {
	if in == nil {
		return nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		panic(err) // the door's types always marshal
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

func (o *VirtualMachineInstance) DeepCopyObject() runtime.Object     { return deepCopy(o) }
func (o *VirtualMachineInstanceList) DeepCopyObject() runtime.Object { return deepCopy(o) }
func (o *Image) DeepCopyObject() runtime.Object                      { return deepCopy(o) }
func (o *ImageList) DeepCopyObject() runtime.Object                  { return deepCopy(o) }
func (o *VirtualMachineConfig) DeepCopyObject() runtime.Object       { return deepCopy(o) }
func (o *VirtualMachineConfigList) DeepCopyObject() runtime.Object   { return deepCopy(o) }
func (o *OrkaNode) DeepCopyObject() runtime.Object                   { return deepCopy(o) }
func (o *OrkaNodeList) DeepCopyObject() runtime.Object               { return deepCopy(o) }
