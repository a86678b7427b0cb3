// Package templates keeps a node's booted templates. For each warm VM
// config whose image the node holds (up to a count and a size), it boots a
// guest of the config's shape (image, CPU, memory, devices) once, waits
// until it answers on its SSH port, and saves it with its memory
// (hypervisor.MemorySnapshots); a VM of that shape placed on the node then
// starts from a copy of the template (RestoreAs: a copy of its disk, the
// VM's own ports and screen password) in about a second instead of
// booting. Templates are never made from a user's VM: each boots fresh from
// the image. The manager builds them one at a time in the background,
// drops those no config wants any more (a config deleted, turned cold, or
// its image moved by a commit), reports the ready ones to the replicated
// state (placement prefers their nodes; a config shows them as warmNodes),
// and drops a template that fails to restore: the VM then boots, so a
// deploy never fails because of a template.
package templates
