package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"slices"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
	"github.com/svc-project/svc/testkit/raftbench"
)

// floorPath is the way a floor's writes go.
type floorPath int

const (
	// throughFollower: a follower's proxy forwards each write to the
	// leader, which proposes it.
	throughFollower floorPath = iota
	// straightToLeader: the clients send to the leader, which proposes.
	straightToLeader
	// httpLegsOnly: as throughFollower, but the leader answers the node
	// without proposing anything: what the HTTP legs alone cost and allow.
	httpLegsOnly
)

// writeFloor measures the floor of the API's tag writes on this machine:
// what the parts svc's write path is made of do alone, with nothing of
// svc's around them. Three Raft stores (bolt logs fsync'd, production
// timings, mutual TLS between them unless plain) hold svc's FSM with one
// node; the leader serves the same tag write with net/http alone (decode
// the JSON, propose the command, answer the node as JSON). Through a
// follower, its httputil.ReverseProxy forwards the writes to the leader
// over mutual TLS (plain HTTP when plain), as svc's follower does. No
// authentication, audit, validation, routing or metrics.
// clients concurrent clients send n writes along path.
func writeFloor(b *testing.B, plain bool, path floorPath, clients, n int) raftbench.Result {
	b.Helper()
	rc := raftbench.Start(b, 3, !plain)
	leader := rc.Leader()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const node = "floor-node"
	if _, err := leader.ApplyCommand(ctx, raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{Name: node, Phase: api.PhaseReady, Time: time.Now()}); err != nil {
		b.Fatal(err)
	}
	n0, ok := leader.FSM.Node(node)
	if !ok {
		b.Fatal("the floor's node was not recorded")
	}
	var leaderTLS, hopTLS *tls.Config
	scheme := "http"
	if !plain {
		leaderTLS, hopTLS, scheme = rc.Server[0], rc.Client[1], "https"
	}
	propose := path != httpLegsOnly
	leaderAddr := serveFloor(b, floorLeader(leader, n0.Namespace, propose), leaderTLS)
	addr := leaderAddr
	if path != straightToLeader {
		tr := &http.Transport{MaxIdleConnsPerHost: 64, TLSClientConfig: hopTLS}
		b.Cleanup(tr.CloseIdleConnections)
		addr = serveFloor(b, &httputil.ReverseProxy{
			Transport: tr,
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = scheme, leaderAddr, leaderAddr
				pr.SetXForwarded()
			},
			FlushInterval: -1, // as svc's forwarder
		}, nil)
	} else if !plain {
		addr = serveFloor(b, floorLeader(leader, n0.Namespace, propose), nil) // clients reach svc's API over plain HTTP too
	}
	cl := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer cl.CloseIdleConnections()
	url := "http://" + addr + "/tag/" + node
	res, err := raftbench.Closed(clients, n, func(i int) error {
		resp, err := cl.Post(url, "application/json", bytes.NewBufferString(fmt.Sprintf(`{"tag":"p%d"}`, i%50)))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var got raftfsm.Node
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("floor write: %s: %v", resp.Status, err)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// floorLeader serves POST /tag/{node} with {"tag": ...}: the command svc's
// tag route proposes, and its answer, with nothing around them. Without
// propose it answers the node as it stands, with the tag added to the
// answer only.
func floorLeader(s *raftstore.Store, ns string, propose bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tag/{node}", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Tag string `json:"tag"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var v any
		var err error
		if propose {
			v, err = s.ApplyCommand(r.Context(), raftfsm.TypeNodeTag, raftfsm.NodeTag{Namespace: ns, Name: r.PathValue("node"), Tag: req.Tag})
		} else if n, ok := s.FSM.Node(r.PathValue("node")); ok {
			n.Tags = append(slices.Clone(n.Tags), req.Tag)
			v = n
		} else {
			err = fmt.Errorf("no node %s", r.PathValue("node"))
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	})
	return mux
}

// serveFloor serves h on a loopback port (TLS when cfg is set) until the
// benchmark ends, and returns its address.
func serveFloor(b *testing.B, h http.Handler, cfg *tls.Config) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}
