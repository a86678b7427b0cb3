// Package kit is what the cluster-wide tests (e2e/...) share: clusters of real
// peers in one process (testcluster) with the fake hypervisor or real libvirt,
// and the steps those tests take on them (deploy a guest and run a command
// in it, wait for a hot pool or a template, push to a registry, a runner pool
// rig against GitHub's stand-in, Orka's tools' calls through the Kubernetes
// door), each wait bounded by the product's own bound (libvirt.go).
package kit
