// Package hotpool keeps a node's hot guests: for each warm VM config with a
// hot count (raftfsm.VMConfig.Hot) whose booted template the node holds, it
// keeps that many guests of the config's shape restored from the template
// and running, their clocks set and each made its own by the image's
// identity step (a new machine id, SSH host keys and random seed: never
// shared), owned by no namespace and reachable by no one (no host
// forwards; a screen only on a socket of the host). It reports the free
// ones to the replicated state, where the VMCreate that places a VM of
// their shape on the node claims one (raftfsm.VM.Domain); the node's VM
// worker then has the pool hand it over (Claim): the driver adds the VM's
// forwards and screen to the running guest (hypervisor.HotClaimer) and the
// guest is named after the VM, Running about as soon as the deploy is
// recorded. A claimed guest never returns to the pool: its VM's deletion
// removes it, and a hand-over that fails destroys it (the VM then starts
// from the template or boots). The pool refills in the background, one
// guest at a time, within a memory cap and the memory the node's VMs leave;
// it is drained when its config changes shape (a new image, CPU, memory),
// is deleted or turned cold, and when the node is cordoned; a peer that
// restarts destroys the hot guests it did not claim and fills again.
package hotpool
