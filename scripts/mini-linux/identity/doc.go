// Command identity is mini-linux's identity step, the executable svc's
// nodes run through the guest agent as /usr/lib/svc/identity (see svc's
// docs/api.md, "Identity"), and what makes the guest's identity at boot:
//
//	identity <host name> boot      names the guest (hostname, /etc/hostname)
//	identity <host name> restore   the same, after it reseeds the kernel's
//	                               random generator from the host's seed on
//	                               stdin, makes a new machine id and new SSH
//	                               host keys, and restarts the SSH server
//	identity -init                 at boot (rcS): a machine id, SSH host keys
//	                               and the SSH server started
//
// It is one static Go program rather than a shell script calling
// dropbearkey and friends because a restored guest waits for it before it
// is Running, and each process a shell starts costs tens of milliseconds
// under software emulation. It needs root.
package main
