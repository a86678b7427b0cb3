// Package scheduler places VMs on nodes. Placement is a validated deploy
// (the VM and the constraints on its node) as the API hands it to the
// leader; Place is pure: it reads a snapshot of the nodes and a request and
// returns a node, or an error that says for each node of the namespace why
// it cannot take the VM. No I/O, no clock.
package scheduler
