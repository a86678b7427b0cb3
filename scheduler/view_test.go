package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// A view brought up to date node by node (nodes added, changed, moved
// between namespaces, cordoned, removed) places every request where a view
// made afresh of the same nodes does.
func TestView_updates_agree_with_a_fresh_view(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	v := NewView()
	nodes := map[string]Node{}
	for step := range 20000 {
		name := fmt.Sprintf("n%02d", r.IntN(40))
		switch r.IntN(10) {
		case 0:
			v.Remove(name)
			delete(nodes, name)
		default:
			n := randomCluster(r, 1)[0]
			n.Name = name
			switch r.IntN(5) {
			case 0:
				n.Namespace = "other"
			case 1:
				n.Cordoned = true
			case 2:
				n.Templates = []string{"tpl"}
			}
			v.Set(n)
			nodes[name] = n
		}
		if v.Len() != len(nodes) {
			t.Fatalf("step %d: the view holds %d nodes, want %d", step, v.Len(), len(nodes))
		}
		req := randomRequest(r)
		req.Template = "tpl"
		if r.IntN(3) == 0 {
			req.Tag = "ssd"
		}
		if r.IntN(4) == 0 {
			req.ImageHolders = []string{name, "n07"}
		}
		list := make([]Node, 0, len(nodes))
		for _, n := range nodes {
			list = append(list, n)
		}
		r.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] }) // any order
		got, gotErr := v.Place(req, nil)
		want, wantErr := placeOver(list, req)
		if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("step %d: the updated view chose %q (%v), a fresh one %q (%v)", step, got, gotErr, want, wantErr)
		}
		if want != placeByReasons(list, req) {
			t.Fatalf("step %d: %q is not the node the reasons choose", step, want)
		}
	}
}

// Facts, when given, are what the port and macOS checks read.
func TestView_facts(t *testing.T) {
	v := NewView()
	v.Set(node("a", 16, 64))
	v.Set(node("b", 2, 2))
	f := facts{ports: map[string]map[int]bool{"a": {8080: true}}}
	got, err := v.Place(Request{Namespace: "ns", CPU: 1, Memory: gi, HostPorts: []int{8080}}, f)
	if err != nil || got != "b" {
		t.Fatalf("got %q, %v; want b (port 8080 is taken on a)", got, err)
	}
	_, err = v.Place(Request{Namespace: "ns", CPU: 4, Memory: gi, HostPorts: []int{8080}}, f)
	if err == nil || err.Error() != "no node can take the VM: a: port 8080 is taken; b: not enough CPU (2 free, 4 needed)" {
		t.Fatalf("got %v", err)
	}
}

type facts struct {
	ports map[string]map[int]bool
	macOS map[string]int
}

func (f facts) UsedPorts(n string) map[int]bool { return f.ports[n] }
func (f facts) MacOSVMs(n string) int           { return f.macOS[n] }
