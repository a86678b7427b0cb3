package kube

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svc-project/svc/api"
)

// Labels of a job's pod, as Orka's tools select them.
const (
	jobTypeLabel = "orka.macstadium.com/job.type"
	jobNameLabel = "batch.kubernetes.io/job-name"
)

// Pod is a registry job as the pod that runs it: Orka's tools follow a
// push by its pod's phase.
type Pod struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              PodSpec   `json:"spec"`
	Status            PodStatus `json:"status"`
}

// PodSpec says where the job runs.
type PodSpec struct {
	NodeName string `json:"nodeName,omitempty"`
}

// PodStatus is the job's phase: Pending, Running, Succeeded or Failed.
type PodStatus struct {
	Phase     string       `json:"phase,omitempty"`
	Message   string       `json:"message,omitempty"`
	StartTime *metav1.Time `json:"startTime,omitempty"`
}

func (o *Pod) meta() *metav1.ObjectMeta   { return &o.ObjectMeta }
func (o *Pod) typeMeta() *metav1.TypeMeta { return &o.TypeMeta }

// jobTypes are the job.type label of each kind of job.
var jobTypes = map[string]string{"push": "registry-push", "pull": "registry-pull", "cache": "image-cache"}

func podResource() *resource {
	return &resource{
		plural: "pods", singular: "pod", kind: "Pod", shortNames: []string{"po"}, svc: "jobs", watches: true,
		newObject: func() object { return &Pod{} },
		convert: func(raw json.RawMessage) (object, bool, error) {
			var j api.Job
			if err := json.Unmarshal(raw, &j); err != nil {
				return nil, false, err
			}
			typ, ok := jobTypes[j.Type]
			if !ok {
				return nil, true, nil
			}
			start := metav1.NewTime(j.StartTime)
			return &Pod{
				ObjectMeta: metav1.ObjectMeta{
					Name: j.Name, CreationTimestamp: start,
					Labels: map[string]string{jobTypeLabel: typ, jobNameLabel: j.Name, "job-name": j.Name},
				},
				Spec:   PodSpec{NodeName: j.Node},
				Status: PodStatus{Phase: j.State, Message: j.Message, StartTime: &start},
			}, false, nil
		},
	}
}
