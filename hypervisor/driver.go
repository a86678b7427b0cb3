package hypervisor

import (
	"context"
	"errors"
	"io"
	"time"
)

// State is the observed state of a domain.
type State string

// Domain states.
const (
	StateRunning State = "running"
	StatePaused  State = "paused"
	StateShutoff State = "shutoff"
	// StateStopping is a guest that is shutting down: still running, soon off.
	StateStopping State = "stopping"
	StateCrashed  State = "crashed"
	StateOther    State = "other"
)

// ErrNotFound is returned for a domain the hypervisor does not have.
var ErrNotFound = errors.New("domain not found")

// ErrDiskMissing is returned by Start for a domain whose disk is gone:
// Create makes it a fresh one (its changes are lost).
var ErrDiskMissing = errors.New("the domain's disk is missing")

// Forward maps a port of the node's address to a guest port.
type Forward struct {
	HostPort  int `json:"hostPort"`
	GuestPort int `json:"guestPort"`
}

// Spec is everything a driver needs to create a VM.
type Spec struct {
	// Name is the domain name; unique per peer (see DomainName).
	Name      string
	CPU       int
	MemoryMiB int64
	// BaseImage is the path of the base disk; the VM writes to an overlay on it.
	BaseImage  string
	BaseFormat string // qcow2 or raw
	// ISO, when set, is attached as a CD-ROM.
	ISO string
	// LegacyIO selects an emulated IDE disk and e1000 NIC instead of virtio.
	LegacyIO bool
	// ListenAddr is the node address VNC and the forwards listen on.
	ListenAddr string
	// VNCPort is the node port of the guest's screen (5900-65535).
	VNCPort int
	// VNCPassword, when set, is the password the screen asks for (VNC
	// authentication uses its first 8 characters); without one the screen
	// is open to anyone who reaches the port.
	VNCPassword string
	// Forwards are TCP ports of ListenAddr forwarded into the guest (SSH,
	// screen sharing, reserved ports).
	Forwards []Forward
	// GuestOS is the image's operating system: "" or "linux", or "darwin"
	// (a macOS guest, which only the vz driver runs).
	GuestOS string
	// NVRAM, when set, is the image's NVRAM (a macOS guest's auxiliary
	// storage) each VM starts from a copy of; HardwareModel is the Mac
	// platform the image was installed for.
	NVRAM         string
	HardwareModel []byte
	// SharedDir, when set, is a host folder the guest sees read-write as a
	// shared directory tagged SharedTag (its namespace's shared storage):
	// virtio-9p under libvirt, a virtio file system under vz.
	SharedDir string
	// Hot marks a hot guest's domain (hot.go): it has no forwards, and its
	// screen (VNCPort 0) listens where only the host reaches it, so that a
	// claim can open it at the VM's port (HotClaimer).
	Hot bool
}

// SharedTag is the tag of a VM's shared folder: mini-linux mounts it at
// /shared.
const SharedTag = "svc-shared"

// SharedDirs is the role of a driver that can give a guest a host folder
// (Spec.SharedDir).
type SharedDirs interface {
	// CanShareDirs returns nil when the hypervisor can, or why it cannot.
	CanShareDirs(ctx context.Context) error
	// SharedDirOwner is the user and group the guest's files in the folder
	// belong to on the host (the folder's root must be theirs).
	SharedDirOwner() (uid, gid int)
}

// Domain is a domain of this peer as the hypervisor reports it.
type Domain struct {
	Name  string
	State State
}

// Driver is what every hypervisor does: run a VM's domain and report it.
// What only some hypervisors can do is a role interface of its own
// (Pauser, Disks, Console, MemorySnapshots, GuestGuard, GuestAgent); AbilitiesOf finds them at run
// time, and a caller that needs one asks for it and refuses plainly
// (ErrUnsupported) without it. Every method is bounded by its context.
type Driver interface {
	// Describe names the driver and how it runs VMs, for logs.
	Describe() string
	// Probe returns nil when the hypervisor answers.
	Probe(ctx context.Context) error
	// Create defines and starts a domain. It creates the VM's overlay disk on
	// the base image unless the overlay already exists (a domain recreated
	// after it vanished keeps its disk).
	Create(ctx context.Context, s Spec) error
	// Start boots a defined, stopped domain.
	Start(ctx context.Context, name string) error
	// Stop asks the guest to shut down (ACPI) and forces it off after grace.
	Stop(ctx context.Context, name string, grace time.Duration) error
	// Delete forces the domain off, undefines it and removes its disk.
	Delete(ctx context.Context, name string) error
	// List returns the domains of this peer.
	List(ctx context.Context) ([]Domain, error)
}

// Pauser holds a running guest where it is, memory and all, and lets it
// go on (a VM's suspend and resume).
type Pauser interface {
	Suspend(ctx context.Context, name string) error
	Resume(ctx context.Context, name string) error
}

// Disks works on a domain's disk: the overlay on its base image.
type Disks interface {
	// Revert forces the domain off, replaces its overlay with a fresh one on
	// the base image (all changes are lost) and starts it again.
	Revert(ctx context.Context, s Spec) error
	// Export writes the domain's disk, its overlay flattened onto its base,
	// to dst as a standalone qcow2 or raw disk. The domain must be shut off.
	Export(ctx context.Context, name, dst string) error
	// DiskPath returns the path of a domain's overlay disk.
	DiskPath(name string) string
}

// DiskResizer grows a domain's disk.
type DiskResizer interface {
	// ResizeDisk grows the domain's disk to bytes: while it runs, live
	// (the guest sees its disk grow), else on the file. A size below the
	// disk's is an error.
	ResizeDisk(ctx context.Context, name string, bytes int64) error
	// DiskSize is the size of the domain's disk as its guest sees it.
	DiskSize(name string) (int64, error)
}

// ErrShrink is returned for a resize below a disk's size.
var ErrShrink = errors.New("a disk never shrinks")

// ErrNoSpace is returned for a resize the host's disk has no room for.
var ErrNoSpace = errors.New("not enough free disk space on the node")

// GuestPorts reaches any TCP port of a guest from the host.
type GuestPorts interface {
	// OpenGuestPort makes a host address ("127.0.0.1:port") that reaches
	// the running domain's guest port until release is called.
	OpenGuestPort(ctx context.Context, name string, port int) (addr string, release func(), err error)
	// CloseGuestPorts removes every forward OpenGuestPort made for the
	// domain and did not release (its peer crashed holding them); it
	// returns how many it removed.
	CloseGuestPorts(ctx context.Context, name string) (int, error)
}

// Console is a hypervisor that serves a guest's screen itself, on a VNC
// server at Spec.ListenAddr:Spec.VNCPort, and keeps the output of its
// serial console.
type Console interface {
	ConsoleLog(name string) ([]byte, error)
}

// MemorySnapshots saves a guest's memory and device state to a file and
// starts it again from there, running where it was: a restore takes the
// time to read the memory back, not a boot.
type MemorySnapshots interface {
	// SaveMemory writes the state of a running or paused domain to path (a
	// new file) and stops the domain; its definition and disk stay.
	SaveMemory(ctx context.Context, name, path string) error
	// RestoreMemory starts the domain a SaveMemory file holds, running.
	RestoreMemory(ctx context.Context, path string) error
	// MemoryPath is where a domain's memory file goes (Delete removes it
	// with the domain).
	MemoryPath(name string) string
	// RestoreAs makes the new domain s from the memory file of domain from
	// at MemoryPath(from) and a copy of from's disk as it was saved: s runs
	// where from was saved, with s's own name, disk, forwards and screen.
	// from and s have the same shape (CPU, memory, base image, devices); a
	// booted template (from) restored as a VM (s) is a VM ready at once.
	// On failure nothing of s is left.
	RestoreAs(ctx context.Context, from string, s Spec) error
}

// BaseCopies is a hypervisor that keeps its own copy of each base image it
// started VMs from (vz: a raw conversion of a qcow2 blob, cloned into each
// VM's disk); the node drops the copies of blobs it no longer holds, as it
// collects the blobs.
type BaseCopies interface {
	// DropBaseCopies removes every copy whose base keep no longer wants
	// (keep is given the base's file name: the blob's hex digest) and
	// returns the names it removed.
	DropBaseCopies(ctx context.Context, keep func(base string) bool) ([]string, error)
}

// GuestAgent talks to an agent inside the guest (QEMU's guest agent on
// libvirt, over a virtio-serial channel every domain has). A guest without
// one answers ErrNoAgent.
type GuestAgent interface {
	// SetGuestTime sets the guest's clock to the host's (after a restore or
	// a resume, where it ran on from when it stopped).
	SetGuestTime(ctx context.Context, name string) error
	// GuestInfo asks the agent what the guest is and where it is reached.
	GuestInfo(ctx context.Context, name string) (GuestInfo, error)
	// Exec runs a program in the guest and streams its outputs to c's
	// writers while it runs, bounded by ctx: a program still running when
	// ctx ends is killed (ErrExecTimeout).
	Exec(ctx context.Context, name string, c ExecCommand) (ExecResult, error)
	// RunShort runs a short program in the guest, bounded by ctx, and writes
	// its outputs to c's writers once it has ended: quicker to answer than
	// Exec (no shell around the program, no files), for programs whose
	// output is small (each is cut at c.MaxOutput, at most MaxShortOutput)
	// and whose stdin is at most MaxShortStdin.
	RunShort(ctx context.Context, name string, c ExecCommand) (ExecResult, error)
	// FreezeFS flushes and freezes the guest's file systems (none is
	// written until ThawFS) and returns how many it froze.
	FreezeFS(ctx context.Context, name string) (int, error)
	// ThawFS lets the guest's frozen file systems be written again.
	ThawFS(ctx context.Context, name string) error
}

// ExecCommand is a program to run in a guest.
type ExecCommand struct {
	// Argv is the program (found on the guest's PATH) and its arguments.
	Argv []string
	// Stdin is given to the program whole; its stdin then ends.
	Stdin []byte
	// Stdout and Stderr receive what it writes (nil: discarded), each cut
	// after MaxOutput bytes (0: MaxExecOutput).
	Stdout, Stderr io.Writer
	MaxOutput      int64
}

// ExecResult is how a program run in a guest ended.
type ExecResult struct {
	// ExitCode is the program's exit status; a program killed by a signal
	// is 128 plus the signal, as a shell says.
	ExitCode int
	// StdoutTruncated and StderrTruncated say whether an output was cut
	// at ExecCommand.MaxOutput.
	StdoutTruncated, StderrTruncated bool
}

// MaxExecOutput is the default bound of each of a guest program's
// outputs; MaxExecStdin bounds its stdin.
const (
	MaxExecOutput = 1 << 20
	MaxExecStdin  = 1 << 20
)

// MaxShortOutput bounds each output of a RunShort program, MaxShortStdin
// its stdin (what one agent call carries well: larger ones, which Exec
// takes, timed out in libvirt under emulation).
const (
	MaxShortOutput = 64 << 10
	MaxShortStdin  = 64 << 10
)

// A guest program run through Exec or RunShort with a ctx that sets no
// deadline gets these: a program that never ends, or an agent that never
// reports its end, holds no caller for good.
const (
	MaxExecRun  = 6 * time.Hour
	MaxShortRun = time.Minute
)

// ErrNotStarted is wrapped by a failure of Exec or RunShort before the
// program started in the guest: running it again runs it once.
var ErrNotStarted = errors.New("the program did not start")

// ErrExecTimeout is returned for a guest program that did not end in time.
var ErrExecTimeout = errors.New("the program did not end in time")

// GuestInfo is what a guest's agent says of it.
type GuestInfo struct {
	// OS names the guest's operating system ("Debian GNU/Linux 12", or
	// the kernel's name and release where the guest has no os-release).
	OS string
	// IPs are the guest's addresses, loopback and link-local left out.
	IPs []string
}

// ErrNoAgent is returned for a guest whose agent does not answer (none is
// installed, or it has not started yet).
var ErrNoAgent = errors.New("the guest's agent does not answer")

// GuestIdentity is a hypervisor whose guests carry more than their disk:
// a macOS guest's NVRAM (auxiliary storage) and Mac platform, which an
// image saved from it keeps.
type GuestIdentity interface {
	// Identity returns the path of the domain's NVRAM and its hardware
	// model ("" and nil for a guest that has none).
	Identity(name string) (nvram string, hardwareModel []byte, err error)
}

// ErrTransient is wrapped by a failure of the host that passes by itself
// (the kernel short of a resource for a moment: EAGAIN): the same call is
// worth trying again, even for a VM that never ran.
var ErrTransient = errors.New("the host was short of a resource for a moment")

// ErrUnsupported is returned for what the host's hypervisor cannot do.
var ErrUnsupported = errors.New("the host's hypervisor cannot do this")

// Abilities are the optional roles a driver has.
type Abilities struct {
	Pause, Disks, Console, Memory, Guard, Agent, Resize, Ports bool
}

// AbilitiesOf finds the optional roles d has.
func AbilitiesOf(d Driver) Abilities {
	_, pause := d.(Pauser)
	_, disks := d.(Disks)
	_, console := d.(Console)
	_, memory := d.(MemorySnapshots)
	_, guard := d.(GuestGuard)
	_, agent := d.(GuestAgent)
	_, resize := d.(DiskResizer)
	_, ports := d.(GuestPorts)
	return Abilities{Pause: pause, Disks: disks, Console: console, Memory: memory, Guard: guard, Agent: agent, Resize: resize, Ports: ports}
}

// DomainName is the domain name of VM vm of namespace ns on peer peer. Names
// of peers, namespaces and VMs hold no '.', so the name is unambiguous and
// several peers can share one libvirtd.
func DomainName(peer, ns, vm string) string { return DomainPrefix(peer) + ns + "." + vm }

// DomainPrefix starts the name of every domain of peer.
func DomainPrefix(peer string) string { return "svc." + peer + "." }

// TemplateDomain is the domain name of peer's booted template key: under
// the peer's prefix, in a "namespace" no namespace can be ('_' is not in
// names), so no VM's domain is ever taken for it.
func TemplateDomain(peer, key string) string { return TemplatePrefix(peer) + key }

// TemplatePrefix starts the name of every template domain of peer.
func TemplatePrefix(peer string) string { return DomainPrefix(peer) + "_template." }

// BootTimeout bounds how long svc waits for a guest from its start until it
// answers on its SSH port: a template's boot (templates.Config.BootTimeout's
// default), and what tests wait for a guest. Under emulation on a busy
// 2-core host a boot has taken over two minutes.
const BootTimeout = 5 * time.Minute
