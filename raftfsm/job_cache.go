package raftfsm

import (
	"fmt"
	"strings"
)

// MaxCacheTargets bounds the nodes one cache job copies an image to.
const MaxCacheTargets = 256

// JobTarget is one node of a cache job and how its copy goes.
type JobTarget struct {
	Node       string `json:"node"`
	State      string `json:"state"`
	BytesDone  int64  `json:"bytesDone"`
	BytesTotal int64  `json:"bytesTotal"`
	Message    string `json:"message,omitempty"`
}

// Ended tells whether the target's copy is over.
func (t *JobTarget) Ended() bool { return t.State == JobSucceeded || t.State == JobFailed }

// checkTargets checks a new cache job: its image, and targets that are
// distinct nodes of the cluster, at most MaxCacheTargets.
func (s *State) checkTargets(j *Job) error {
	if len(j.Targets) == 0 || len(j.Targets) > MaxCacheTargets {
		return ruleErr(ErrInvalid, "a cache job copies to 1 to %d nodes, not %d", MaxCacheTargets, len(j.Targets))
	}
	if _, ok := s.Images[key(j.Namespace, j.Image)]; !ok {
		return ruleErr(ErrNotFound, "image %q not found in namespace %q", j.Image, j.Namespace)
	}
	seen := map[string]bool{}
	for i := range j.Targets {
		t := &j.Targets[i]
		if _, ok := s.Nodes[t.Node]; !ok {
			return ruleErr(ErrNotFound, "node %q not found", t.Node)
		}
		if seen[t.Node] {
			return ruleErr(ErrInvalid, "node %q is named twice", t.Node)
		}
		seen[t.Node] = true
		t.State, t.BytesDone, t.BytesTotal, t.Message = JobPending, 0, 0, ""
	}
	j.Node = ""
	return nil
}

// updateTarget records a target's report, then adds the targets up: the
// job runs while one does, and once all have ended it has Succeeded, or
// Failed naming the targets that failed.
func (j *Job) updateTarget(c JobUpdate) error {
	var t *JobTarget
	for i := range j.Targets {
		if j.Targets[i].Node == c.Target {
			t = &j.Targets[i]
		}
	}
	if t == nil {
		return ruleErr(ErrNotFound, "node %q is not a target of job %q", c.Target, j.Name)
	}
	if t.Ended() {
		return ruleErr(ErrConflict, "the copy to %s has ended (%s)", t.Node, t.State)
	}
	t.State, t.BytesDone, t.BytesTotal, t.Message = c.State, c.BytesDone, c.BytesTotal, c.Message
	if len(t.Message) > MaxJobMessage {
		t.Message = t.Message[:MaxJobMessage]
	}
	j.BytesDone, j.BytesTotal = 0, 0
	ended := true
	var failed []string
	for _, x := range j.Targets {
		j.BytesDone += x.BytesDone
		j.BytesTotal += x.BytesTotal
		ended = ended && x.Ended()
		if x.State == JobFailed {
			failed = append(failed, fmt.Sprintf("%s: %s", x.Node, x.Message))
		}
	}
	j.State, j.Message = JobRunning, ""
	if !ended {
		return nil
	}
	j.State = JobSucceeded
	j.Message = "copied to " + nodes(len(j.Targets))
	if len(failed) > 0 {
		j.State = JobFailed
		j.Message = fmt.Sprintf("%d of %s failed: %s", len(failed), nodes(len(j.Targets)), strings.Join(failed, "; "))
	}
	if len(j.Message) > MaxJobMessage {
		j.Message = j.Message[:MaxJobMessage]
	}
	t2 := c.Time
	j.CompletionTime = &t2
	return nil
}

func nodes(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}
