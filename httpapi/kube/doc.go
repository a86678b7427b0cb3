// Package kube is the Kubernetes-shaped door to svc's API: the discovery
// documents (/version, /api, /apis), the resources Orka 3's tools use in
// the API group orka.macstadium.com/v1 (and the same under svc's own
// group, svc-project.io/v1): virtualmachineinstances, images,
// virtualmachineconfigs and orkanodes, and the registry push jobs as
// pods of the core group, as client-go, controller-runtime, kubectl and
// Orka's Packer plugin speak to them: objects with metadata, spec and
// status, lists and watches with resourceVersions, fieldSelector and
// labelSelector, DeleteOptions, and Status errors.
//
// It keeps no state and applies no rule of its own: every call becomes the
// /api/v1 call that means the same, served in-process by the peer's own
// handler with the caller's request (its token, its address, its
// certificate), so the door has the same tokens, namespaces, role
// bindings, audit, quotas and forwarding to the leader as /api/v1; the
// door only translates the shapes.
package kube
