package kube

import (
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The objects are Orka 3's, field for field as its public Go types (the
// ones its Packer plugin builds its client from) name them.

// VirtualMachineInstance is a VM.
type VirtualMachineInstance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              VMISpec   `json:"spec"`
	Status            VMIStatus `json:"status,omitempty"`
}

// VMISpec is what a VirtualMachineInstance asks for (a deploy).
type VMISpec struct {
	Image            string            `json:"image"`
	CPU              int               `json:"cpu"`
	NodeName         *string           `json:"nodeName,omitempty"`
	ReservedPorts    string            `json:"reservedPorts,omitempty"`
	ISO              *string           `json:"iso,omitempty"`
	CustomVMMetadata map[string]string `json:"customVMMetadata,omitempty"`
	SystemSerial     *string           `json:"systemSerial,omitempty"`
	Tag              *string           `json:"tag,omitempty"`
	TagRequired      *bool             `json:"tagRequired,omitempty"`
	VNCConsole       *bool             `json:"vncConsole,omitempty"`
	Scheduler        *string           `json:"scheduler,omitempty"`
	NetBoost         *bool             `json:"netBoost,omitempty"`
	LegacyIO         *bool             `json:"legacyIO,omitempty"`
	GPUPassthrough   *bool             `json:"gpuPassthrough,omitempty"`
	Memory           *float64          `json:"memory,omitempty"`
	DisplayWidth     int               `json:"displayWidth,omitempty"`
	DisplayHeight    int               `json:"displayHeight,omitempty"`
	DisplayDPI       int               `json:"displayDPI,omitempty"`
}

// VMIStatus is where a VirtualMachineInstance is and how to reach it.
type VMIStatus struct {
	Phase           string `json:"phase,omitempty"`
	Memory          string `json:"memory"`
	NodeName        string `json:"nodeName"`
	HostIP          string `json:"hostIP"`
	IP              string `json:"ip"`
	SSHPort         *int   `json:"sshPort,omitempty"`
	VNCPort         *int   `json:"vncPort,omitempty"`
	ScreenSharePort *int   `json:"screenSharePort,omitempty"`
	PortWarnings    string `json:"portWarnings"`
	StartTime       int64  `json:"startTime"`
	ErrorMessage    string `json:"errorMessage"`
}

// Image is an image.
type Image struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ImageSpec   `json:"spec,omitempty"`
	Status            ImageStatus `json:"status,omitempty"`
}

// ImageSpec is an image's facts, and in a create the operation that makes
// it (sourceType vm: save the VM source as destination).
type ImageSpec struct {
	Size            *kresource.Quantity `json:"size,omitempty"`
	SpaceUsed       *kresource.Quantity `json:"spaceUsed,omitempty"`
	Owner           string              `json:"owner,omitempty"`
	Source          string              `json:"source,omitempty"`
	SourceNamespace string              `json:"sourceNamespace,omitempty"`
	SourceType      string              `json:"sourceType,omitempty"`
	Destination     string              `json:"destination,omitempty"`
	Checksum        string              `json:"checksum,omitempty"`
}

// ImageStatus is an image's state: Ready, Updating or Failed.
type ImageStatus struct {
	State                string `json:"state,omitempty"`
	LastUpdatedTimestamp string `json:"lastUpdatedTimestamp,omitempty"`
	ErrorMessage         string `json:"errorMessage,omitempty"`
}

// VirtualMachineConfig is a VM config.
type VirtualMachineConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              VMConfigSpec `json:"spec,omitempty"`
}

// VMConfigSpec is a VM config's deploy settings.
type VMConfigSpec struct {
	Image          string   `json:"image"`
	CPU            int      `json:"cpu"`
	Memory         *float64 `json:"memory,omitempty"`
	ISO            *string  `json:"iso,omitempty"`
	VNCConsole     *bool    `json:"vncConsole,omitempty"`
	NetBoost       *bool    `json:"netBoost,omitempty"`
	LegacyIO       *bool    `json:"legacyIO,omitempty"`
	GPUPassthrough *bool    `json:"gpuPassthrough,omitempty"`
	SystemSerial   *string  `json:"systemSerial,omitempty"`
	Tag            *string  `json:"tag,omitempty"`
	TagRequired    *bool    `json:"tagRequired,omitempty"`
	Scheduler      *string  `json:"scheduler,omitempty"`
	NodeName       *string  `json:"nodeName,omitempty"`
	DisplayWidth   int      `json:"displayWidth,omitempty"`
	DisplayHeight  int      `json:"displayHeight,omitempty"`
	DisplayDPI     int      `json:"displayDPI,omitempty"`
}

// OrkaNode is a node.
type OrkaNode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              NodeSpec   `json:"spec,omitempty"`
	Status            NodeStatus `json:"status,omitempty"`
}

// NodeSpec is a node's tags and namespace.
type NodeSpec struct {
	Tags      []string `json:"tags"`
	Namespace string   `json:"namespace"`
}

// NodeStatus is a node's room and state.
type NodeStatus struct {
	NodeIP                  string `json:"nodeIP"`
	AvailableCPU            int    `json:"availableCpu"`
	AvailableMemory         string `json:"availableMemory"`
	AvailableGPU            int    `json:"availableGpu"`
	AllocatableCPU          int64  `json:"allocatableCpu"`
	AllocatableMemory       string `json:"allocatableMemory"`
	AllocatableGpu          int64  `json:"allocatableGpu"`
	NodeType                string `json:"nodeType"`
	Phase                   string `json:"phase"`
	KubeletVersion          string `json:"kubeletVersion"`
	ContainerRuntimeVersion string `json:"containerRuntimeVersion"`
	OSVersion               string `json:"osVersion"`
}

// list is a Kubernetes list of any kind.
type list[T any] struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []T `json:"items"`
}
