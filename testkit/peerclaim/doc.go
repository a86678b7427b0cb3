// Package peerclaim keeps the test clusters that share this machine's
// libvirtd apart. A peer removes the domains under its own name prefix that
// it does not know, and a VM's ports listen on its peer's address: two
// clusters with a peer of one name, or on one address, destroy or shadow
// each other's VMs. Every test cluster that reaches libvirtd claims its peer
// names and addresses here first, and a claim another test holds fails at
// once, naming both.
//
// A claim is a file in a directory of the machine (Dir). Inside `make test`
// (SVC_PEER_CLAIMS set to a directory made afresh for the run) a name
// belongs to the first test or script that claimed it for the whole run, so
// two parts of the suite that would ever share a name fail every run,
// whether or not they happen to run at the same time. Outside it, a claim
// lasts while its holder runs.
package peerclaim
