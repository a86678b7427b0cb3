package hypervisor

import "context"

// A node's hot pool keeps guests of a warm config's shape restored from its
// template and running, owned by no VM and reachable by no one: no host
// forwards, a screen only on a socket of the host. A deploy that claims one
// hands it to its VM (HotClaimer), which is then Running at once.

// HotPrefix starts the domain name of every hot guest of peer: under the
// peer's prefix, in a "namespace" no namespace can be ('_' is not in
// names), as raftfsm.HotDomainPrefix says.
func HotPrefix(peer string) string { return DomainPrefix(peer) + "_hot." }

// HotDomain names a new hot guest of shape key on peer; id makes the name
// one no other guest ever had.
func HotDomain(peer, key, id string) string { return HotPrefix(peer) + key + "." + id }

// DomainFor is the domain of VM vm of namespace ns on peer: claimed, the
// hot guest its deploy claimed, when set; else the name made from the VM's.
func DomainFor(peer, ns, vm, claimed string) string {
	if claimed != "" {
		return claimed
	}
	return DomainName(peer, ns, vm)
}

// HotClaimer is the role of a driver that hands a running hot guest to a
// VM: the spec's host forwards and screen (its address, port and password)
// are added to the running domain, and the domain's persistent definition
// becomes the spec's, so that it stops and starts as the VM. The domain
// keeps its name (the spec's Name is the domain's). On failure the caller
// deletes the domain: a guest half handed over is never used.
type HotClaimer interface {
	ClaimHot(ctx context.Context, s Spec) error
}
