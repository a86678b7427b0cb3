package api

// Inside a VM, through the agent in its guest and its host peer: run a
// program (POST .../vms/{vm}/run, or the same path as a websocket that
// streams), reach a guest TCP port (GET .../vms/{vm}/port-forward?port=N,
// a websocket), grow its disk (POST .../vms/{vm}/resize).

// RunRequest runs a program in a VM's guest.
type RunRequest struct {
	// Command is the program (found on the guest's PATH) and its arguments.
	Command []string `json:"command"`
	// Stdin is given to the program whole (at most MaxRunStdin bytes).
	Stdin string `json:"stdin,omitempty"`
	// TimeoutSeconds bounds the run, 1 to MaxRunTimeout (nil:
	// DefaultRunTimeout): a program still running then is killed and the
	// answer is a 504 Status.
	TimeoutSeconds *int `json:"timeoutSeconds,omitempty"`
}

// RunResult is how the program ended. Each output is cut after
// MaxRunOutput bytes (POST) or MaxRunStreamOutput bytes (the websocket),
// and its Truncated flag says so.
type RunResult struct {
	ExitCode        int    `json:"exitCode"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdoutTruncated"`
	StderrTruncated bool   `json:"stderrTruncated"`
}

// Bounds of a run.
const (
	MaxRunArgs         = 256
	MaxRunArgBytes     = 64 << 10 // all of the command's arguments together
	MaxRunStdin        = 1 << 20
	MaxRunOutput       = 1 << 20
	MaxRunStreamOutput = 64 << 20
	DefaultRunTimeout  = 60
	MaxRunTimeout      = 6 * 3600
)

// The websocket form of a run: the client sends the RunRequest as its first
// (text) message; the server sends each piece of output as a binary
// message whose first byte names the stream (RunStreamStdout or
// RunStreamStderr), then one text message, a RunResult without the outputs
// (or a Status when the run failed), and closes.
const (
	RunStreamStdout byte = 1
	RunStreamStderr byte = 2
)

// ResizeRequest grows a VM's disk to Size ("20G", "512M", bytes): never
// smaller than it is.
type ResizeRequest struct {
	Size string `json:"size"`
}
