package fuzz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// fuzzBodies are the documented bodies of the POST routes (docs/api.md),
// the seeds the fuzzer mutates.
var fuzzBodies = []string{
	`{"tag":"ssd"}`,
	`{"namespace":"team-a"}`,
	`{"name":"team-a"}`,
	`{"users":["alice"],"serviceAccounts":["svc-default:ci"]}`,
	`{}`,
	`{"duration":"720h"}`,
	`{"noExpiration":true}`,
	`{"image":"tiny"}`,
	`{"image":"tiny","name":"vm1","cpu":1,"memory":0.5,"reservedPorts":"8080:80","customMetadata":{"a":"b"},"timeout":2}`,
	`{"vmConfig":"c1","memory":0.0,"legacyIO":false,"netBoost":false,"gpuPassthrough":false,"tagRequired":false}`,
	`{"name":"c1","image":"tiny","cpu":1,"memory":0.5}`,
	`{"action":"stop"}`,
	`{"action":"start"}`,
	`{"action":"revert"}`,
	`{"type":2,"body":{}}`,
	`{"name":"blank","size":"16M","description":"d"}`,
	`{"newName":"copy1","description":"c"}`,
	`{"description":"described"}`,
	`{"imageName":"saved1","description":"s"}`,
	`[]`,
	`{"cpu":-1,"memory":1e308,"name":"A/b"}`,
	`{"warm":true}`,
	`{"name":"w1","image":"tiny","cpu":1,"memory":0.5,"warm":true}`,
	`{"nodes":["peer-1"]}`,
	`{"tags":["ssd"]}`,
	`{"all":true}`,
	`{"command":["echo","hi"],"stdin":"fed","timeoutSeconds":5}`,
	`{"command":["cat"],"stdin":"x"}`,
	`{"size":"20G"}`,
	`{"size":"1"}`,
	`{"by":"1h"}`,
	`{"cpu":4,"memory":8,"vms":3}`,
	`{"cpu":0,"memory":0,"vms":0}`,
}

// fuzzParams are the values path parameters take: existing and missing names.
var fuzzParams = map[string][]string{
	":namespace":      {api.DefaultNamespace, "team-a", "nope"},
	":name":           {"peer-1", "nope"},
	":vm":             {"vm1", "nope"},
	":vmconfig":       {"c1", "nope"},
	":serviceaccount": {"ci", "nope"},
	":digest":         {"sha256:" + strings.Repeat("a", 64)},
	":image":          {"tiny", "nope"},
	":iso":            {"nope"},
}

// fingerprint names every resource the state holds, not their status: a
// refused request must leave it as it was.
func fingerprint(t *testing.T, f *raftfsm.FSM) string {
	t.Helper()
	var st struct {
		Namespaces, VMs, VMConfigs, Images, ISOs, ServiceAccounts, RoleBindings, Users, Blobs map[string]json.RawMessage
		Nodes                                                                                 map[string]struct{ Tags []string }
	}
	b, err := f.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for kind, m := range map[string]map[string]json.RawMessage{
		"ns": st.Namespaces, "vm": st.VMs, "cfg": st.VMConfigs, "img": st.Images, "iso": st.ISOs,
		"sa": st.ServiceAccounts, "user": st.Users, "blob": st.Blobs,
	} {
		for k := range m {
			keys = append(keys, kind+"/"+k)
		}
	}
	for k, rb := range st.RoleBindings {
		keys = append(keys, "rb/"+k+"="+string(rb))
	}
	for k, n := range st.Nodes {
		keys = append(keys, fmt.Sprintf("node/%s=%v", k, n.Tags))
	}
	slices.Sort(keys)
	return strings.Join(keys, "\n")
}

// FuzzAPI_post_routes drives every POST (and PATCH and PUT) route of the router with generated
// JSON bodies: no answer is a 5xx, every error is a Status body, and a
// refused request creates nothing, not even for a moment that outlives it.
func FuzzAPI_post_routes(f *testing.F) {
	c := testcluster.New(f, 1, testcluster.Options{Capacity: raftfsm.Capacity{CPU: 64, MemoryBytes: 64 << 30}, GuestAgent: true})
	m := c.WaitLeader()
	admin := c.Client(m)
	kit.Upload(f, admin, "tiny", kit.TinyImage(f))
	if _, err := admin.CreateNamespace(kit.Ctx(f), "team-a"); err != nil {
		f.Fatal(err)
	}
	var routes []string // "METHOD path"
	for _, r := range m.Peer.API().Routes() {
		if (r.Method == http.MethodPost || r.Method == http.MethodPatch || r.Method == http.MethodPut) && !strings.HasPrefix(r.Path, "/api/v1/internal/") {
			routes = append(routes, r.Method+" "+r.Path)
		}
	}
	slices.Sort(routes)
	for i := range routes {
		for _, b := range fuzzBodies {
			f.Add(uint8(i), uint8(0), b)
		}
	}
	client := &http.Client{Timeout: 2 * time.Minute}
	f.Fuzz(func(t *testing.T, route, params uint8, body string) {
		method, path, _ := strings.Cut(routes[int(route)%len(routes)], " ")
		for param, vals := range fuzzParams {
			path = strings.ReplaceAll(path, param, vals[int(params)%len(vals)])
		}
		settle(t, m.Peer.FSM())
		before := fingerprint(t, m.Peer.FSM())
		req, err := http.NewRequest(method, "http://"+m.Peer.APIAddr()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+admin.Token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// A guest program that outlives its timeout is the one 5xx: 504.
		timedOut := resp.StatusCode == http.StatusGatewayTimeout && strings.HasSuffix(path, "/run") && strings.Contains(string(answer), `"Timeout"`)
		if resp.StatusCode >= 500 && !timedOut {
			t.Fatalf("%s %s %q: %d %s", method, path, body, resp.StatusCode, answer)
		}
		if resp.StatusCode < 400 {
			return
		}
		var st api.Status
		if err := json.Unmarshal(answer, &st); err != nil || st.Kind != "Status" || st.Code != resp.StatusCode || st.Message == "" {
			t.Fatalf("%s %s %q: %d with a body that is not a Status: %s", method, path, body, resp.StatusCode, answer)
		}
		if after := fingerprint(t, m.Peer.FSM()); after != before {
			t.Fatalf("%s %s %q was refused (%d %s) but changed the state:\nbefore\n%s\nafter\n%s", method, path, body, resp.StatusCode, bytes.TrimSpace(answer), before, after)
		}
	})
}

// settle waits until the work earlier calls started in the background (a
// commit or save, a push job) has ended: only then does a refused call's
// state comparison speak of that call alone.
func settle(t *testing.T, f *raftfsm.FSM) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := f.Wait(ctx, func() bool {
		for _, vm := range f.VMs("") {
			if vm.PendingOp != nil {
				return false
			}
		}
		for _, j := range f.Jobs("") {
			if !j.Ended() {
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("background work did not end within a minute: %v", err)
	}
}
