package chaos

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Every key of the workload is a thing that exists or not: a namespace, a
// service account, a VM, or a tag on a node. Writes make it exist (create,
// tag) or not (delete, untag); reads see whether it does.

// Verbs of operations.
const (
	Create = "create"
	Delete = "delete"
	Read   = "read"
)

// Results of operations.
const (
	// OK: the write was acknowledged (it took effect).
	OK = "ok"
	// Exists / Missing: a create or delete refused because the thing already
	// existed / did not exist (no effect, but it tells the state).
	Exists  = "exists"
	Missing = "missing"
	// Present / Absent: what a read saw.
	Present = "present"
	Absent  = "absent"
	// Unknown: the write may or may not have taken effect (a 5xx, a timeout,
	// a dropped connection after sending).
	Unknown = "unknown"
)

// Input is an operation on one key.
type Input struct {
	Key  string `json:"key"`
	Verb string `json:"verb"`
	// Idempotent writes (tag, untag) never answer Exists or Missing.
	Idempotent bool `json:"idempotent,omitempty"`
}

// Op is one recorded operation.
type Op struct {
	Client int    `json:"client"`
	Peer   int    `json:"peer"`
	Input  Input  `json:"input"`
	Result string `json:"result"`
	// Call and Return are nanoseconds since the run started; an Unknown
	// write never returns (it may take effect at any later time).
	Call   int64 `json:"call"`
	Return int64 `json:"return"`
	// Detail is the error or status, for the record.
	Detail string `json:"detail,omitempty"`
}

// IsWrite reports whether the op is a create or delete.
func (o Op) IsWrite() bool { return o.Input.Verb != Read }

// Acked reports whether the op is a write that took effect.
func (o Op) Acked() bool { return o.IsWrite() && o.Result == OK }

// effect is the state a write leaves its key in, and whether it is known.
func (o Op) effect() (exists, known bool) {
	switch o.Result {
	case OK, Exists, Missing:
		return o.Input.Verb == Create, true
	}
	return false, false
}

// History collects operations from concurrent clients.
type History struct {
	start time.Time

	mu  sync.Mutex
	ops []Op
}

// NewHistory starts a history now.
func NewHistory() *History { return &History{start: time.Now()} }

// Now is the time since the history started, in nanoseconds.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// At converts a time to nanoseconds since the history started.
func (h *History) At(t time.Time) int64 { return int64(t.Sub(h.start)) }

// Add records an op; an Unknown write is given no return.
func (h *History) Add(op Op) {
	if op.IsWrite() && op.Result == Unknown {
		op.Return = math.MaxInt64
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
}

// Ops returns the recorded operations sorted by invocation.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.ops)
	slices.SortFunc(out, func(a, b Op) int { return int(a.Call - b.Call) })
	return out
}

// model is the sequential specification: per key, a thing that exists or not.
func model() porcupine.Model {
	return (&porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[string][]porcupine.Operation{}
			var keys []string
			for _, op := range history {
				k := op.Input.(Input).Key
				if _, ok := byKey[k]; !ok {
					keys = append(keys, k)
				}
				byKey[k] = append(byKey[k], op)
			}
			out := make([][]porcupine.Operation, 0, len(keys))
			for _, k := range keys {
				out = append(out, byKey[k])
			}
			return out
		},
		Init: func() []any { return []any{false} },
		Step: func(state, input, output any) []any {
			exists, in, res := state.(bool), input.(Input), output.(string)
			switch in.Verb {
			case Read:
				if (res == Present) == exists {
					return []any{exists}
				}
				return nil
			case Create:
				return step(exists, true, in.Idempotent, res)
			case Delete:
				return step(exists, false, in.Idempotent, res)
			}
			return nil
		},
		DescribeOperation: func(input, output any) string {
			in := input.(Input)
			return fmt.Sprintf("%s(%s) -> %s", in.Verb, in.Key, output)
		},
		DescribeState: func(state any) string {
			if state.(bool) {
				return "exists"
			}
			return "absent"
		},
	}).ToModel()
}

// step is a write that makes a key exist (to=true) or not: the states it may
// leave, none if its result cannot follow from exists.
func step(exists, to, idempotent bool, res string) []any {
	switch res {
	case OK:
		if !idempotent && exists == to {
			return nil // a create of what exists would have answered Exists
		}
		return []any{to}
	case Exists, Missing:
		if exists != to {
			return nil
		}
		return []any{exists}
	case Unknown:
		if exists == to {
			return []any{exists}
		}
		return []any{exists, to}
	}
	return nil
}

// porcupineOps turns the history into porcupine's operations.
func porcupineOps(ops []Op) []porcupine.Operation {
	out := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: op.Input, Output: op.Result, Call: op.Call, Return: op.Return})
	}
	return out
}
