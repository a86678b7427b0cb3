// Package scheduler places VMs on nodes. Placement is a validated deploy
// (the VM and the constraints on its node) as the API hands it to the
// leader. A View indexes the nodes (per namespace the ones that take VMs,
// their free capacity packed together; per tag and template the nodes
// carrying them) and is kept from placement to placement, brought up to date
// node by node; View.Place reads it and a request and returns a node, or an
// error that says for each node of the namespace why it cannot take the VM.
// JobPeer chooses the peer that carries out a registry job. No I/O, no
// clock.
package scheduler
