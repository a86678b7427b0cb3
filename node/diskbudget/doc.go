// Package diskbudget keeps what a peer has promised on the file system of
// its data dir, where images, VM disks, shared folders, booted templates,
// the Raft log and the peer's own files all live. Every bound the cluster
// promises is reserved against that one disk together, and a floor is
// kept free for Raft and logs: work that would take the disk below the
// floor is refused with a message (ErrNoRoom), so a full disk stops new
// work, never the log.
//
// Two kinds of use are counted beside what the file system has free:
//   - growers: things already made whose files may still grow within a
//     bound (a VM's disk up to its size, a shared folder up to its bound).
//     Each says how much more it may take (its bound less what its files
//     hold now).
//   - holds: work under way that is about to write a known amount (a pull,
//     an upload, a save, a template's build), each held until its files are
//     written and counted by the file system or by a grower. A hold on a
//     path counts only what that file does not hold yet.
//
// The room for new work is what the file system has free, less the floor,
// less what growers may still take, less what holds are about to write.
package diskbudget
