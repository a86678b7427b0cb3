package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svc-project/svc/api"
)

// Workload is the clients' side of a run.
type Workload struct {
	C       *Cluster
	History *History
	Clients int
	Seed    uint64
	// Image is the image VMs are deployed from (uploaded beforehand).
	Image string

	counts  sync.Map // outcome -> *atomic.Int64
	probes  []Probe
	probeMu sync.Mutex
}

// Key spaces: few keys, so that clients contend on them.
const (
	nsKeys  = 4
	saKeys  = 4
	vmKeys  = 4
	tagKeys = 2
)

func nsName(i int) string  { return fmt.Sprintf("chaos-ns-%d", i) }
func saName(i int) string  { return fmt.Sprintf("sa-%d", i) }
func vmName(i int) string  { return fmt.Sprintf("vm-%d", i) }
func tagName(i int) string { return fmt.Sprintf("t-%d", i) }

// Timeouts of the clients' requests: a deploy waits up to its minute for
// Running; everything else answers in milliseconds when the cluster is well,
// so a client gives up after a few seconds (the outcome is then unknown) and
// moves on rather than wait on a frozen peer.
const (
	opTimeout     = 4 * time.Second
	deployTimeout = 75 * time.Second
)

// Run drives the cluster with w.Clients clients until ctx ends.
func (w *Workload) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range w.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(w.Seed, uint64(i)))
			for ctx.Err() == nil {
				w.one(i, rng)
				select {
				case <-ctx.Done():
				case <-time.After(time.Duration(5+rng.IntN(20)) * time.Millisecond):
				}
			}
		}()
	}
	wg.Wait()
}

// count tallies an outcome for the report.
func (w *Workload) count(outcome string) {
	v, _ := w.counts.LoadOrStore(outcome, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// Counts returns the tallied outcomes.
func (w *Workload) Counts() map[string]int64 {
	out := map[string]int64{}
	w.counts.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// one runs one random operation through a random peer.
func (w *Workload) one(client int, rng *rand.Rand) {
	peer := 1 + rng.IntN(w.C.N)
	verb := Read
	switch r := rng.IntN(10); {
	case r < 3:
		verb = Create
	case r < 6:
		verb = Delete
	}
	const ns = api.DefaultNamespace
	switch rng.IntN(4) {
	case 0:
		n := nsName(rng.IntN(nsKeys))
		key := "ns/" + n
		switch verb {
		case Create:
			w.write(client, peer, Input{Key: key, Verb: verb}, http.MethodPost, "/api/v1/namespaces", api.Namespace{Name: n}, opTimeout)
		case Delete:
			w.write(client, peer, Input{Key: key, Verb: verb}, http.MethodDelete, "/api/v1/namespaces/"+n, nil, opTimeout)
		default:
			w.readOne(client, peer, key, "/api/v1/namespaces/"+n+"?consistent=true")
		}
	case 1:
		sa := saName(rng.IntN(saKeys))
		key, path := "sa/"+sa, "/api/v1/namespaces/"+ns+"/serviceaccounts/"+sa
		switch verb {
		case Create:
			w.write(client, peer, Input{Key: key, Verb: verb}, http.MethodPost, path, struct{}{}, opTimeout)
		case Delete:
			w.write(client, peer, Input{Key: key, Verb: verb}, http.MethodDelete, path, nil, opTimeout)
		default:
			w.readList(client, peer, "/api/v1/namespaces/"+ns+"/serviceaccounts?consistent=true", w.sasSeen)
		}
	case 2:
		vm := vmName(rng.IntN(vmKeys))
		key := "vm/" + vm
		switch verb {
		case Create:
			one, quarter, minute := 1, 0.25, 1.0
			w.write(client, peer, Input{Key: key, Verb: verb}, http.MethodPost, "/api/v1/namespaces/"+ns+"/vms",
				api.DeployRequest{Image: w.Image, Name: vm, CPU: &one, Memory: &quarter, Timeout: &minute}, deployTimeout)
		case Delete:
			w.write(client, peer, Input{Key: key, Verb: verb}, http.MethodDelete, "/api/v1/namespaces/"+ns+"/vms/"+vm, nil, opTimeout)
		default:
			w.readOne(client, peer, key, "/api/v1/namespaces/"+ns+"/vms/"+vm+"?consistent=true")
		}
	default:
		node, tag := w.C.Name(1+rng.IntN(w.C.N)), tagName(rng.IntN(tagKeys))
		key := "tag/" + node + "/" + tag
		switch verb {
		case Create, Delete:
			action := "tag"
			if verb == Delete {
				action = "untag"
			}
			w.write(client, peer, Input{Key: key, Verb: verb, Idempotent: true}, http.MethodPost,
				"/api/v1/namespaces/"+ns+"/nodes/"+node+"/"+action, api.TagRequest{Tag: tag}, opTimeout)
		default:
			w.readList(client, peer, "/api/v1/namespaces/"+ns+"/nodes?consistent=true", w.tagsSeen)
		}
	}
}

// listBody is the part of a list answer the reads look at.
type listBody struct {
	Items []struct {
		Name string   `json:"name"`
		Tags []string `json:"svcTags"`
	} `json:"items"`
}

// tagsSeen is, for every tag key, whether a node list shows it.
func (w *Workload) tagsSeen(body listBody) map[string]bool {
	seen := map[string]bool{}
	for i := 1; i <= w.C.N; i++ {
		for t := range tagKeys {
			seen["tag/"+w.C.Name(i)+"/"+tagName(t)] = false
		}
	}
	for _, n := range body.Items {
		for _, t := range n.Tags {
			if _, ok := seen["tag/"+n.Name+"/"+t]; ok {
				seen["tag/"+n.Name+"/"+t] = true
			}
		}
	}
	return seen
}

// sasSeen is, for every service account key, whether a list shows it.
func (w *Workload) sasSeen(body listBody) map[string]bool {
	seen := map[string]bool{}
	for i := range saKeys {
		seen["sa/"+saName(i)] = false
	}
	for _, it := range body.Items {
		if _, ok := seen["sa/"+it.Name]; ok {
			seen["sa/"+it.Name] = true
		}
	}
	return seen
}

// classify turns an answer into a result. It returns "" (with the reason
// counted) for an answer that shows the request had no effect and tells
// nothing of the state: never sent, refused by validation or authorization,
// or no room for a VM.
func (w *Workload) classify(verb string, err error) string {
	var se *api.StatusError
	switch {
	case err == nil:
		return OK
	case errors.As(err, &se):
		switch {
		case se.Status.Reason == api.ReasonAlreadyExists && verb == Create:
			return Exists
		case se.Status.Code == http.StatusNotFound && verb != Create:
			return Missing
		case se.Status.Code == http.StatusNotFound:
			// A deploy that placed its VM and found it deleted meanwhile.
			w.count(fmt.Sprintf("%s: %d", verb, se.Status.Code))
			return Unknown
		case se.Status.Code == http.StatusUnauthorized:
			w.count("refused: 401 (a good token refused)")
			return ""
		case se.Status.Code == http.StatusConflict:
			w.count("refused: 409 " + se.Status.Reason)
			return ""
		case se.Status.Code >= 500 || se.Status.Code == http.StatusRequestTimeout:
			w.count(fmt.Sprintf("%s: %d", verb, se.Status.Code))
			return Unknown
		}
		w.count(fmt.Sprintf("refused: %d %s", se.Status.Code, se.Status.Message))
		return ""
	case isDialError(err):
		w.count("not sent: peer unreachable")
		return ""
	}
	w.count(verb + ": no answer")
	return Unknown
}

func (w *Workload) write(client, peer int, in Input, method, path string, body any, timeout time.Duration) {
	call := w.History.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	err := w.C.Client(peer, timeout).Do(ctx, method, path, body, nil)
	cancel()
	ret := w.History.Now()
	res := w.classify(in.Verb, err)
	if res == "" {
		return
	}
	w.count("write: " + res)
	detail := ""
	if err != nil {
		detail = err.Error()
	}
	w.History.Add(Op{Client: client, Peer: peer, Input: in, Result: res, Call: call, Return: ret, Detail: detail})
}

// readOne reads one thing: 200 is Present, 404 Absent; anything else tells
// nothing and is left out.
func (w *Workload) readOne(client, peer int, key, path string) {
	call := w.History.Now()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	err := w.C.Client(peer, opTimeout).Do(ctx, http.MethodGet, path, nil, nil)
	cancel()
	ret := w.History.Now()
	res := Present
	if api.CodeOf(err) == http.StatusNotFound {
		res = Absent
	} else if err != nil {
		w.classify(Read, err)
		return
	}
	w.count("read: answered")
	w.History.Add(Op{Client: client, Peer: peer, Input: Input{Key: key, Verb: Read}, Result: res, Call: call, Return: ret})
}

// readList reads a list and records, for every key seen reports on, one
// read at the list's time.
func (w *Workload) readList(client, peer int, path string, seen func(listBody) map[string]bool) {
	call := w.History.Now()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	var body listBody
	err := w.C.Client(peer, opTimeout).Do(ctx, http.MethodGet, path, nil, &body)
	cancel()
	ret := w.History.Now()
	if err != nil {
		w.classify(Read, err)
		return
	}
	w.count("read: answered")
	for key, present := range seen(body) {
		res := Absent
		if present {
			res = Present
		}
		w.History.Add(Op{Client: client, Peer: peer, Input: Input{Key: key, Verb: Read}, Result: res, Call: call, Return: ret})
	}
}

// FinalReads reads every key once through the leader, after the faults.
func (w *Workload) FinalReads(peer int) {
	const client = -1
	for i := range nsKeys {
		w.readOne(client, peer, "ns/"+nsName(i), "/api/v1/namespaces/"+nsName(i)+"?consistent=true")
	}
	for i := range vmKeys {
		w.readOne(client, peer, "vm/"+vmName(i), "/api/v1/namespaces/"+api.DefaultNamespace+"/vms/"+vmName(i)+"?consistent=true")
	}
	w.readList(client, peer, "/api/v1/namespaces/"+api.DefaultNamespace+"/nodes?consistent=true", w.tagsSeen)
	w.readList(client, peer, "/api/v1/namespaces/"+api.DefaultNamespace+"/serviceaccounts?consistent=true", w.sasSeen)
}

// Probe is what a peer served first after it restarted: the tags of its
// first node list answered from its own replica (not through the leader).
type Probe struct {
	Peer            int             `json:"peer"`
	Restarted       int64           `json:"restarted"`
	Call, Return    int64           `json:"-"`
	Tags            map[string]bool `json:"tags"`
	Unauthorized    int             `json:"unauthorized"`
	Unavailable     int             `json:"unavailable"`
	NeverAnsweredOK bool            `json:"neverAnsweredOk,omitempty"`
}

// ProbeRestart polls a restarted peer's own replica until it answers, and
// keeps its first answer, to check that it served no state older than what
// was acknowledged before it restarted.
func (w *Workload) ProbeRestart(ctx context.Context, peer int, restarted int64) {
	p := Probe{Peer: peer, Restarted: restarted}
	path := "/api/v1/namespaces/" + api.DefaultNamespace + "/nodes"
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		call := w.History.Now()
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		var body listBody
		err := w.C.Client(peer, time.Second).Do(cctx, http.MethodGet, path, nil, &body)
		cancel()
		switch code := api.CodeOf(err); {
		case err == nil:
			p.Call, p.Return, p.Tags = call, w.History.Now(), w.tagsSeen(body)
			w.addProbe(p)
			return
		case code == http.StatusUnauthorized:
			p.Unauthorized++
		case code == http.StatusServiceUnavailable:
			p.Unavailable++
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	p.NeverAnsweredOK = true
	w.addProbe(p)
}

func (w *Workload) addProbe(p Probe) {
	w.probeMu.Lock()
	defer w.probeMu.Unlock()
	w.probes = append(w.probes, p)
}

// Probes returns the restart probes.
func (w *Workload) Probes() []Probe {
	w.probeMu.Lock()
	defer w.probeMu.Unlock()
	return append([]Probe(nil), w.probes...)
}
