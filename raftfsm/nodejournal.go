package raftfsm

import "encoding/json"

// nodeJournal records which nodes each applied change touched (a node's
// record, or what its VMs take and hold), so that a reader that keeps its
// own view of the nodes (the leader's scheduler) brings it up to date node
// by node instead of reading every node at every placement. Marks count
// entries; the journal keeps the newest journalMax of them.
type nodeJournal struct {
	seq   uint64   // the mark of the newest entry
	all   uint64   // the mark of the newest change that may have touched any node
	names []string // the nodes of marks seq-len(names)+1 .. seq
}

// journalMax bounds the journal: a reader further behind reads every node.
const journalMax = 4096

// note records a change of one node.
func (j *nodeJournal) note(node string) {
	j.seq++
	if len(j.names) == journalMax {
		j.names = append(j.names[:0], j.names[journalMax/2:]...)
	}
	j.names = append(j.names, node)
}

// noteAll records a change that may have touched any node.
func (j *nodeJournal) noteAll() {
	j.seq++
	j.all = j.seq
	j.names = j.names[:0]
}

// since returns the nodes changed after mark, or all when the journal cannot
// say (a change touched every node, or it no longer reaches back to mark).
func (j *nodeJournal) since(mark uint64) (names []string, all bool) {
	oldest := j.seq - uint64(len(j.names)) // the mark just before the first kept entry
	if mark < j.all || mark < oldest || mark > j.seq {
		return nil, true
	}
	return j.names[len(j.names)-int(j.seq-mark):], false
}

// blindResources are the records whose commands never change a node's
// record nor what its VMs take; a command of any other resource but VMs
// (whose node is noted) may touch every node. A new resource is node-wide
// until it is listed here.
var blindResources = map[Resource]bool{
	ResourceVMConfig: true, ResourceImage: true, ResourceBlob: true, ResourceJob: true, ResourceRunner: true,
	ResourceUser: true, ResourceServiceAccount: true, ResourceRoleBinding: true, ResourceCert: true, ResourceSigningKey: true,
	ResourceAudit: true, ResourceJoinToken: true, ResourceGossipKeys: true, ResourceOIDC: true, ResourceRegistryCredential: true,
	ResourceCatalog: true,
}

// noteCommand records what an applied command c touched: for a VM's
// command the nodes it was on before and after, when they differ (a
// create, a delete); for a command about one node (but its removal) that
// node; nothing for a blind resource; every node otherwise.
func (j *nodeJournal) noteCommand(c Command, before, after string) {
	switch r := c.Type.Resource(); {
	case r == ResourceNode && c.Type != TypeNodeRemove:
		var b struct {
			Name string `json:"name"`
			Node string `json:"node"` // node-templates
		}
		_ = json.Unmarshal(c.Body, &b)
		switch {
		case b.Name != "":
			j.note(b.Name)
		case b.Node != "":
			j.note(b.Node)
		default:
			j.noteAll()
		}
	case r == ResourceVM:
		if before != after {
			for _, n := range []string{before, after} {
				if n != "" {
					j.note(n)
				}
			}
		}
	case !blindResources[r]:
		j.noteAll()
	}
}

// NodesSince calls fn with every node whose record or usage changed after
// mark (the mark a previous call returned; 0 for every node), under the
// replica's read lock (fn must not keep n nor call the FSM). It returns the
// mark for the next call, and all when fn was called with every node: the
// caller then forgets the nodes fn was not called with.
func (f *FSM) NodesSince(mark uint64, fn func(n *Node, used Usage)) (next uint64, all bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	used := f.state.ix().used
	names, all := f.journal.since(mark)
	if mark == 0 {
		all = true
	}
	if all {
		for _, n := range f.state.Nodes {
			fn(n, used[n.Name])
		}
		return f.journal.seq, true
	}
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if n, ok := f.state.Nodes[name]; ok && !seen[name] {
			seen[name] = true
			fn(n, used[name])
		}
	}
	return f.journal.seq, false
}
