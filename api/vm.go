package api

import (
	"math"
	"strconv"
	"time"
)

// VM statuses.
const (
	StatusPending   = "Pending"
	StatusRunning   = "Running"
	StatusStopped   = "Stopped"
	StatusSuspended = "Suspended"
	StatusFailed    = "Failed"
	// StatusUnknown is shown while the VM's node is NOT READY.
	StatusUnknown = "Unknown"
)

// Schedulers a deploy or VM config may name.
const (
	// SchedulerDefault spreads load: the node with the most room left wins.
	SchedulerDefault = "default"
	// SchedulerMostAllocated packs: the node with the least room left wins.
	SchedulerMostAllocated = "most-allocated"
)

// ValidScheduler reports whether s names a scheduler ("" is the default).
func ValidScheduler(s string) bool {
	return s == "" || s == SchedulerDefault || s == SchedulerMostAllocated
}

// Node port ranges svc allocates VM ports from: VNC screens, and the SSH and
// screen-sharing forwards. reservedPorts may not use them.
const (
	VNCPortMin, VNCPortMax         = 5900, 6899
	ForwardPortMin, ForwardPortMax = 20000, 29999
)

// MinNodePort is the lowest node port a VM may hold: the ports below are
// privileged, the host's own services' (and QEMU, which runs
// unprivileged, cannot listen on them).
const MinNodePort = 1024

// Deploy defaults.
const (
	DefaultCPU       = 3
	DefaultMemoryGiB = 2.0
	// DefaultTimeoutMinutes bounds a deploy's wait for Running.
	DefaultTimeoutMinutes = 10
)

// VM is the record of a deployed VM (spec 2.2 plus the fields of API.md).
type VM struct {
	Name string `json:"name"`
	// UID tells this VM from an earlier or later one of the same name.
	UID    uint64 `json:"uid,omitempty"`
	Node   string `json:"node"`
	Memory string `json:"memory"`
	IP     string `json:"ip"`
	SSH    int    `json:"ssh"`
	VNC    int    `json:"vnc"`
	// VNCPassword opens the VM's screen at ip:vnc (VNC authentication).
	VNCPassword    string            `json:"vncPassword,omitempty"`
	Screenshare    int               `json:"screenshare"`
	Status         string            `json:"status"`
	CPU            int               `json:"cpu"`
	DeployDate     time.Time         `json:"deployDate"`
	Image          string            `json:"image"`
	GPUPassthrough bool              `json:"gpuPassthrough"`
	VMConfig       string            `json:"vmConfig"`
	CustomMetadata map[string]string `json:"customMetadata"`
	Type           string            `json:"type"`
	Namespace      string            `json:"namespace"`
	Owner          string            `json:"owner"`
	ErrorMessage   string            `json:"errorMessage"`
	ReservedPorts  string            `json:"reservedPorts,omitempty"`
	LegacyIO       bool              `json:"legacyIO"`
	// SharedStorage says the VM sees its namespace's shared folder of its
	// node (at /shared in mini-linux).
	SharedStorage bool     `json:"sharedStorage"`
	ISO           string   `json:"iso,omitempty"`
	PortWarnings  []string `json:"portWarnings"`
	// StartedFrom says how the guest started: "template" (restored from a
	// booted template of a warm VM config's shape, ready in about a
	// second) or "boot"; empty until it has started.
	StartedFrom string `json:"startedFrom,omitempty"`
	// GuestAgent says whether an agent inside the guest answers (QEMU's
	// guest agent); GuestOS and GuestIPs are what it says of the guest.
	GuestAgent bool     `json:"guestAgent"`
	GuestOS    string   `json:"guestOS,omitempty"`
	GuestIPs   []string `json:"guestIPs"`
	// Identity says whether the image's identity step made the guest its
	// own (host name = the VM's name; after a template restore, new SSH
	// host keys, machine id and random pool too) since it last started;
	// absent until it has started.
	Identity *GuestIdentity `json:"identity,omitempty"`
	// DiskBytes is the size of the VM's disk as the guest sees it (0: not
	// known yet, for a VM whose image is still being pulled).
	DiskBytes int64 `json:"diskBytes"`
	// ExpiresAt, for a VM deployed with a ttl, is when it is deleted.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// GuestIdentity is how a VM's identity step went: State is one of the
// Identity states; Message says why for none and failed.
type GuestIdentity struct {
	State   string `json:"state"`
	Message string `json:"message,omitempty"`
}

// Identity states (GuestIdentity.State).
const (
	// IdentityPending: the step is due, waiting for the guest's agent.
	IdentityPending = "pending"
	// IdentitySet: the step ran.
	IdentitySet = "set"
	// IdentityNone: the image has no step, or the hypervisor no guest agent.
	IdentityNone = "none"
	// IdentityFailed: the step failed.
	IdentityFailed = "failed"
	// IdentityNoAgentYet begins the message of a "none" whose step is still
	// due: the guest's agent has not answered yet, and the step runs when
	// it does.
	IdentityNoAgentYet = "no guest agent answered"
)

// DeployRequest is the body of POST .../vms. Pointer fields tell "not given"
// from zero, so a VM config's value is kept unless the body sets it.
type DeployRequest struct {
	Image              string            `json:"image,omitempty"`
	VMConfig           string            `json:"vmConfig,omitempty"`
	Name               string            `json:"name,omitempty"`
	ShouldGenerateName bool              `json:"shouldGenerateName,omitempty"`
	CPU                *int              `json:"cpu,omitempty"`
	Memory             *float64          `json:"memory,omitempty"`
	Node               string            `json:"node,omitempty"`
	Tag                string            `json:"tag,omitempty"`
	TagRequired        *bool             `json:"tagRequired,omitempty"`
	Scheduler          string            `json:"scheduler,omitempty"`
	GPUPassthrough     *bool             `json:"gpuPassthrough,omitempty"`
	ISO                string            `json:"iso,omitempty"`
	ReservedPorts      string            `json:"reservedPorts,omitempty"`
	Timeout            *float64          `json:"timeout,omitempty"`
	CustomMetadata     map[string]string `json:"customMetadata,omitempty"`
	NetBoost           *bool             `json:"netBoost,omitempty"`
	LegacyIO           *bool             `json:"legacyIO,omitempty"`
	// SharedStorage gives the VM its namespace's shared folder on its node
	// (403 where the namespace has none; the VM boots: no template).
	SharedStorage *bool `json:"sharedStorage,omitempty"`
	DisplayWidth  *int  `json:"displayWidth,omitempty"`
	DisplayHeight *int  `json:"displayHeight,omitempty"`
	DisplayDPI    *int  `json:"displayDpi,omitempty"`
	// TTL, a duration ("2h"), has the VM deleted that long after its
	// deploy (its expiresAt); a VM config's applies when it is absent.
	TTL string `json:"ttl,omitempty"`
}

// ExecRequest is the body of POST .../vms/{vm}/exec.
type ExecRequest struct {
	Action string `json:"action"`
}

// VMConfig is a VM config: the create body and the record.
type VMConfig struct {
	Name           string            `json:"name"`
	Image          string            `json:"image"`
	CPU            int               `json:"cpu,omitempty"`
	Memory         float64           `json:"memory,omitempty"`
	Scheduler      string            `json:"scheduler,omitempty"`
	Tag            string            `json:"tag,omitempty"`
	TagRequired    bool              `json:"tagRequired,omitempty"`
	Node           string            `json:"node,omitempty"`
	GPUPassthrough bool              `json:"gpuPassthrough,omitempty"`
	ISO            string            `json:"iso,omitempty"`
	NetBoost       bool              `json:"netBoost,omitempty"`
	LegacyIO       bool              `json:"legacyIO,omitempty"`
	SharedStorage  bool              `json:"sharedStorage,omitempty"`
	DisplayWidth   int               `json:"displayWidth,omitempty"`
	DisplayHeight  int               `json:"displayHeight,omitempty"`
	DisplayDPI     int               `json:"displayDpi,omitempty"`
	CustomMetadata map[string]string `json:"customMetadata,omitempty"`
	Owner          string            `json:"owner,omitempty"`
	CreatedAt      *time.Time        `json:"createdAt,omitempty"`
	// TTL is the time-to-live of the config's VMs ("2h"; none when empty).
	TTL string `json:"ttl,omitempty"`
	// Warm makes every node holding the image keep a booted template of
	// the config's shape, so that its VMs start without a boot.
	Warm bool `json:"warm,omitempty"`
	// WarmNodes (answers only) names the nodes where such a template is
	// ready.
	WarmNodes []string `json:"warmNodes"`
	// Hot is how many guests of the config's shape each node holding its
	// template keeps restored and running for its deploys to claim (a hot
	// pool: the VM is Running about as soon as its deploy is recorded);
	// 0 by default, at most MaxHot, and only on a warm config.
	Hot int `json:"hot,omitempty"`
	// HotNodes (answers only) is, by node, how many of its hot guests of
	// the config's shape are ready and free; a node filling its pool has
	// fewer than Hot.
	HotNodes map[string]int `json:"hotNodes,omitempty"`
}

// MaxHot bounds a VM config's hot count.
const MaxHot = 8

// VMConfigChange is the body of PATCH .../vmconfigs/{vmconfig}.
type VMConfigChange struct {
	// Warm turns the config's booted templates on or off.
	Warm *bool `json:"warm"`
	// Hot sets the config's hot pool (VMConfig.Hot).
	Hot *int `json:"hot,omitempty"`
}

// Image is an image record.
type Image struct {
	Name         string    `json:"name"`
	Description  string    `json:"description"`
	Type         string    `json:"type"`
	Size         string    `json:"size"`
	SpaceUsed    string    `json:"spaceUsed"`
	Digest       string    `json:"digest"`
	SourceType   string    `json:"sourceType"`
	Source       string    `json:"source"`
	State        string    `json:"state"`
	ErrorMessage string    `json:"errorMessage"`
	Owner        string    `json:"owner"`
	CreatedAt    time.Time `json:"createdAt"`
}

// ISO is an ISO record: like an image record, without arch.
type ISO struct {
	Name         string    `json:"name"`
	Description  string    `json:"description"`
	Size         string    `json:"size"`
	SpaceUsed    string    `json:"spaceUsed"`
	Digest       string    `json:"digest"`
	SourceType   string    `json:"sourceType"`
	Source       string    `json:"source"`
	State        string    `json:"state"`
	ErrorMessage string    `json:"errorMessage"`
	Owner        string    `json:"owner"`
	CreatedAt    time.Time `json:"createdAt"`
}

// Image states.
const (
	ImageReady    = "Ready"
	ImageUpdating = "Updating"
	ImageFailed   = "Failed"
)

// GenerateImageRequest is the body of POST .../images: an empty qcow2 disk
// of a virtual size ("10G", "512M").
type GenerateImageRequest struct {
	Name        string `json:"name"`
	Size        string `json:"size"`
	Description string `json:"description,omitempty"`
}

// CopyRequest is the body of POST .../images/{image}/copy and
// .../isos/{iso}/copy; the copy keeps the description unless one is given.
type CopyRequest struct {
	NewName     string  `json:"newName"`
	Description *string `json:"description,omitempty"`
}

// DescriptionRequest is the body of POST .../images/{image}/description and
// .../isos/{iso}/description.
type DescriptionRequest struct {
	Description string `json:"description"`
}

// CommitRequest is the body of POST .../vms/{vm}/commit.
type CommitRequest struct {
	Description *string `json:"description,omitempty"`
}

// SaveRequest is the body of POST .../vms/{vm}/save.
type SaveRequest struct {
	ImageName   string  `json:"imageName"`
	Description *string `json:"description,omitempty"`
}

// StatusURL answers a commit or save: where to watch the image.
type StatusURL struct {
	StatusURL string `json:"statusUrl"`
}

// FormatGi formats bytes as binary gibibytes: "6Gi", "2.5Gi".
func FormatGi(bytes int64) string {
	return strconv.FormatFloat(float64(bytes)/(1<<30), 'f', -1, 64) + "Gi"
}

// FormatSize formats bytes with the largest binary unit, to at most two
// decimals: "64M", "10G", "1.5G".
func FormatSize(bytes int64) string {
	units := []struct {
		suffix string
		size   float64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}}
	for _, u := range units {
		if float64(bytes) >= u.size {
			return strconv.FormatFloat(math.Round(float64(bytes)/u.size*100)/100, 'f', -1, 64) + u.suffix
		}
	}
	return strconv.FormatInt(bytes, 10)
}
