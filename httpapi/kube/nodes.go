package kube

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svc-project/svc/api"
)

func (o *OrkaNode) meta() *metav1.ObjectMeta   { return &o.ObjectMeta }
func (o *OrkaNode) typeMeta() *metav1.TypeMeta { return &o.TypeMeta }

func nodeResource() *resource {
	return &resource{
		plural: "orkanodes", singular: "orkanode", kind: "OrkaNode", svc: "nodes", watches: true,
		newObject: func() object { return &OrkaNode{} },
		convert: func(raw json.RawMessage) (object, bool, error) {
			var n api.Node
			if err := json.Unmarshal(raw, &n); err != nil {
				return nil, false, err
			}
			return nodeOf(n), false, nil
		},
	}
}

func nodeOf(n api.Node) *OrkaNode {
	tags := n.Tags
	if tags == nil {
		tags = []string{}
	}
	o := &OrkaNode{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name},
		Spec:       NodeSpec{Tags: tags, Namespace: n.Namespace},
		Status: NodeStatus{
			NodeIP: n.NodeIP, AvailableCPU: n.AvailableCPU, AvailableMemory: n.AvailableMemory, AvailableGPU: n.AvailableGPU,
			AllocatableCPU: int64(n.AllocatableCPU), AllocatableMemory: n.AllocatableMemory, AllocatableGpu: int64(n.AllocatableGPU),
			NodeType: n.NodeType, Phase: n.Phase, ContainerRuntimeVersion: n.Hypervisor,
		},
	}
	if n.Arch != "" {
		o.Labels = map[string]string{archLabel: n.Arch}
	}
	return o
}
