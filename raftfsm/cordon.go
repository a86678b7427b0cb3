package raftfsm

// NodeCordon takes a node out of placement (Cordoned) or puts it back: a
// cordoned node keeps its VMs and takes no new one.
type NodeCordon struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Cordoned  bool   `json:"cordoned"`
}

func (s *State) applyNodeCordon(c NodeCordon) (any, error) {
	n, err := s.nodeIn(c.Namespace, c.Name)
	if err != nil {
		return nil, err
	}
	n.Cordoned = c.Cordoned
	return n.clone(), nil
}
