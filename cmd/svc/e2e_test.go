package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/poll"
)

// buildBinary builds the svc binary once for the end-to-end tests.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "svc")
	// -trimpath, as make build: its build cache serves this build.
	out, err := exec.Command("go", "build", "-trimpath", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freePortsOn returns n ports free on ip, held for the test (guest.FreePort).
func freePortsOn(t *testing.T, ip string, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		ports[i] = guest.FreePort(t, ip)
	}
	return ports
}

type agentProc struct {
	name    string
	host    string
	api     string
	cmd     *exec.Cmd
	logFile string
	exited  chan struct{}
}

// cli runs the svc client against an API address and returns its stdout.
// SVC_TOKEN in the test's environment carries the token.
func cli(t *testing.T, bin, apiURL string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--api-url", apiURL}, args...)...)
	cmd.Env = append(os.Environ(), "SVC_CONFIG="+filepath.Join(t.TempDir(), "config.json"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("svc %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func TestBinary_three_agents_survive_leader_kill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	image := guest.RequireLibvirt(t) // the agents run VMs on this host's libvirtd
	bin := buildBinary(t)
	dir := guest.TempDir(t) // QEMU's user reaches the data dirs
	var agents []*agentProc
	// Names and an address of this test's own: other packages' tests run
	// peers on the same libvirtd at the same time, and a peer removes the
	// domains of its name prefix that it does not want.
	const ip = "127.0.250.1"
	ports := freePortsOn(t, ip, 12)
	gossip1 := ip + ":" + strconv.Itoa(ports[2])
	tls := func(i int) string { return strconv.Itoa(ports[9+i]) }
	start := func(i int, env []string, args ...string) *agentProc {
		name := fmt.Sprintf("e2e-%d", i+1)
		a := runAgent(t, bin, dir, name, env, append([]string{"--bind", ip, "--data-dir", filepath.Join(dir, name),
			"--api-port", strconv.Itoa(ports[3*i]), "--raft-port", strconv.Itoa(ports[3*i+1]), "--gossip-port", strconv.Itoa(ports[3*i+2]),
			"--cpu", "2", "--memory", "4", "--gpu", "0", "--tls-port", tls(i)}, args...)...)
		a.api = "http://" + ip + ":" + strconv.Itoa(ports[3*i])
		return a
	}
	poll := func(what string, timeout time.Duration, cond func() error) {
		t.Helper()
		if err := poll.Until(context.Background(), timeout, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	// The first host forms the cluster; the others join it with a token an
	// admin made (in the environment, as bootstrap-cluster.sh hands it).
	agents = append(agents, start(0, nil, "--bootstrap-expect", "1"))
	var joinToken string
	poll("a join token from e2e-1", 60*time.Second, func() error {
		tok, err := os.ReadFile(filepath.Join(dir, "e2e-1", "admin.token"))
		if err != nil {
			return err
		}
		t.Setenv("SVC_TOKEN", strings.TrimSpace(string(tok)))
		out, err := cli(t, bin, agents[0].api, "cluster", "join-token", "create", "--uses", "2", "--auto-approve")
		joinToken = strings.TrimSpace(out)
		return err
	})
	for i := 1; i < 3; i++ {
		agents = append(agents, start(i, []string{"SVC_JOIN_TOKEN=" + joinToken}, "--join", gossip1))
	}

	// Root on peer-1's host takes an admin token from its admin socket.
	var token string
	poll("an admin token from e2e-1's admin socket", 60*time.Second, func() error {
		out, err := cli(t, bin, agents[0].api, "admin", "token", "--socket", filepath.Join(dir, "e2e-1", "admin.sock"), "--user", "admin", "--admin")
		token = strings.TrimSpace(out)
		return err
	})
	t.Setenv("SVC_TOKEN", token)
	if _, err := cli(t, bin, agents[1].api, "node", "list"); err != nil {
		t.Fatalf("node list with the admin token: %v", err)
	}
	t.Setenv("SVC_TOKEN", "")
	if _, err := cli(t, bin, agents[1].api, "node", "list"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("node list without a token: %v", err)
	}
	// A regular user's token from another peer's socket; removing the user voids it.
	sock2 := filepath.Join(dir, "e2e-2", "admin.sock")
	out, err := cli(t, bin, agents[1].api, "admin", "token", "--socket", sock2, "--user", "bob")
	if err != nil {
		t.Fatalf("bob's token: %v", err)
	}
	t.Setenv("SVC_TOKEN", strings.TrimSpace(out))
	poll("bob's token accepted", 10*time.Second, func() error {
		_, err := cli(t, bin, agents[2].api, "vm", "list")
		return err
	})
	if _, err := cli(t, bin, agents[2].api, "node", "tag", "e2e-1", "x"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("bob tags a node: %v", err)
	}
	if out, err := cli(t, bin, agents[1].api, "admin", "user", "remove", "bob", "--socket", sock2); err != nil || !strings.Contains(out, "removed") {
		t.Fatalf("remove bob: %v %s", err, out)
	}
	poll("bob's token refused", 10*time.Second, func() error {
		if _, err := cli(t, bin, agents[2].api, "vm", "list"); err == nil || !strings.Contains(err.Error(), "401") {
			return fmt.Errorf("answer: %v", err)
		}
		return nil
	})
	t.Setenv("SVC_TOKEN", token)

	info := func(a *agentProc) (api.ClusterInfo, error) {
		out, err := cli(t, bin, a.api, "cluster", "info", "-o", "json")
		if err != nil {
			return api.ClusterInfo{}, err
		}
		var ci api.ClusterInfo
		return ci, json.Unmarshal([]byte(out), &ci)
	}
	var leader string
	poll("3 peers with a leader", 60*time.Second, func() error {
		ci, err := info(agents[0])
		if err != nil {
			return err
		}
		if ci.Leader == "" || len(ci.Peers) != 3 {
			return fmt.Errorf("cluster-info %+v", ci)
		}
		leader = ci.Leader
		out, err := cli(t, bin, agents[0].api, "node", "list")
		if err != nil {
			return err
		}
		if strings.Count(out, "READY") != 3 || strings.Contains(out, "NOT READY") {
			return fmt.Errorf("nodes:\n%s", out)
		}
		return nil
	})

	var follower, other *agentProc
	var leaderProc *agentProc
	for _, a := range agents {
		switch {
		case a.name == leader:
			leaderProc = a
		case follower == nil:
			follower = a
		default:
			other = a
		}
	}
	out, err = cli(t, bin, follower.api, "node", "tag", other.name, "e2e")
	if err != nil || !strings.Contains(out, "e2e") {
		t.Fatalf("tag through follower %s: %v %s", follower.name, err, out)
	}

	// VMs through the CLI: upload, deploy (prints how to connect), list, delete.
	if out, err := cli(t, bin, follower.api, "image", "upload", image, "--name", "mini-linux", "-q"); err != nil || !strings.Contains(out, "uploaded") {
		t.Fatalf("image upload: %v %s", err, out)
	}
	out, err = cli(t, bin, follower.api, "vm", "deploy", "--image", "mini-linux", "--name", "cli-vm", "--cpu", "1", "--memory", "0.25", "--node", other.name)
	if err != nil || !strings.Contains(out, "Running") || !strings.Contains(out, "ssh admin@"+ip+" -p ") || !strings.Contains(out, "vnc:") {
		t.Fatalf("vm deploy: %v\n%s", err, out)
	}
	// Running comes seconds before the guest's agent answers: the deploy says
	// the guest boots, not that its image has no agent.
	if !strings.Contains(out, "guest:        booting: its agent has not answered yet") {
		t.Fatalf("vm deploy's guest line, as the guest boots:\n%s", out)
	}
	if out, err := cli(t, bin, leaderProc.api, "vm", "list"); err != nil || !strings.Contains(out, "cli-vm") {
		t.Fatalf("vm list: %v\n%s", err, out)
	}
	out, err = cli(t, bin, follower.api, "vm", "get", "cli-vm", "-o", "json")
	var got api.VM
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.CPU != 1 || got.Memory != "0.25Gi" || got.Node != other.name {
		t.Fatalf("vm get: %v %+v", err, got)
	}
	if out, err := cli(t, bin, follower.api, "vm", "delete", "cli-vm"); err != nil || !strings.Contains(out, "deleted") {
		t.Fatalf("vm delete: %v %s", err, out)
	}

	// Kill the leader outright.
	leaderProc.kill()

	for _, a := range []*agentProc{follower, other} {
		poll(a.name+" to answer with a new leader", 60*time.Second, func() error {
			ci, err := info(a)
			if err != nil {
				return err
			}
			if ci.Leader == "" || ci.Leader == leader {
				return fmt.Errorf("leader %q", ci.Leader)
			}
			out, err := cli(t, bin, a.api, "node", "list", "-o", "json")
			if err != nil {
				return err
			}
			var nodes api.List[api.Node]
			if err := json.Unmarshal([]byte(out), &nodes); err != nil {
				return err
			}
			for _, n := range nodes.Items {
				if n.Name == other.name && (len(n.Tags) != 1 || n.Tags[0] != "e2e") {
					return fmt.Errorf("tag lost: %+v", n)
				}
			}
			_, err = cli(t, bin, a.api, "node", "tag", a.name, "survivor")
			return err
		})
	}
	poll("the killed leader's node NOT READY", 60*time.Second, func() error {
		out, err := cli(t, bin, follower.api, "node", "list")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, leader+" ") && strings.Contains(line, "NOT READY") {
				return nil
			}
		}
		return fmt.Errorf("nodes:\n%s", out)
	})
}

// 'svc agent --dev' alone is a cluster that deploys the default VM (3 CPUs,
// 2 GiB) on a small machine: --dev offers 4 vCPUs per CPU, and the node
// record says so.
func TestBinary_dev_agent_deploys_the_default_vm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	image := guest.RequireLibvirt(t)
	bin := buildBinary(t)
	dir := guest.TempDir(t)  // QEMU's user reaches the data dir
	const ip = "127.0.250.2" // this test's own address and peer name on the shared libvirtd
	ports := freePortsOn(t, ip, 4)
	a := runAgent(t, bin, dir, "e2e-dev", nil, "--dev", "--bind", ip, "--data-dir", filepath.Join(dir, "data"),
		"--api-port", strconv.Itoa(ports[0]), "--raft-port", strconv.Itoa(ports[1]), "--gossip-port", strconv.Itoa(ports[2]), "--tls-port", strconv.Itoa(ports[3]))
	a.api = "http://" + ip + ":" + strconv.Itoa(ports[0])
	var token []byte
	if err := poll.Until(context.Background(), 60*time.Second, func() (err error) {
		token, err = os.ReadFile(filepath.Join(dir, "data", "admin.token"))
		return err
	}); err != nil {
		t.Fatalf("no admin token: %v", err)
	}
	t.Setenv("SVC_TOKEN", strings.TrimSpace(string(token)))
	var node api.Node
	if err := poll.Until(context.Background(), 60*time.Second, func() error {
		out, err := cli(t, bin, a.api, "node", "list", "-o", "json")
		if err != nil {
			return err
		}
		var nodes api.List[api.Node]
		if err := json.Unmarshal([]byte(out), &nodes); err != nil || len(nodes.Items) != 1 || nodes.Items[0].Phase != api.PhaseReady {
			return fmt.Errorf("nodes %s (%v)", out, err)
		}
		node = nodes.Items[0]
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if node.CPUOvercommit != 4 || node.AllocatableCPU < api.DefaultCPU {
		t.Fatalf("a --dev node offers %d vCPUs at overcommit %g", node.AllocatableCPU, node.CPUOvercommit)
	}
	if out, err := cli(t, bin, a.api, "image", "upload", image, "--name", "mini-linux", "-q"); err != nil {
		t.Fatalf("image upload: %v %s", err, out)
	}
	out, err := cli(t, bin, a.api, "vm", "deploy", "--image", "mini-linux", "--name", "bare")
	if err != nil || !strings.Contains(out, "Running") {
		t.Fatalf("a bare deploy on 'svc agent --dev': %v\n%s", err, out)
	}
	checkConsoleBridge(t, bin, a.api, "bare")
	// The image commands, end to end: save the VM, download the result
	// (digest-checked by the CLI), copy, describe, generate, list, delete.
	if out, err := cli(t, bin, a.api, "vm", "save", "bare", "bare-saved", "--description", "saved by the CLI", "--wait", "10m"); err != nil || !strings.Contains(out, "done") {
		t.Fatalf("vm save: %v\n%s", err, out)
	}
	file := filepath.Join(dir, "bare-saved.qcow2")
	if out, err := cli(t, bin, a.api, "image", "download", "bare-saved", "-f", file, "-q"); err != nil {
		t.Fatalf("image download: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"image", "copy", "bare-saved", "bare-copy"},
		{"image", "describe", "bare-copy", "a copy"},
		{"image", "generate", "blank", "--size", "2G"},
	} {
		if out, err := cli(t, bin, a.api, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	if out, err := cli(t, bin, a.api, "image", "generate", "bad", "--size", "-1G"); err == nil {
		t.Fatalf("generate --size -1G was accepted:\n%s", out)
	}
	out, err = cli(t, bin, a.api, "image", "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bare-saved", "bare-copy", "a copy", "blank", "2G", "Ready"} {
		if !strings.Contains(out, want) {
			t.Fatalf("image list lacks %q:\n%s", want, out)
		}
	}
	if out, err := cli(t, bin, a.api, "vm", "delete", "bare"); err != nil {
		t.Fatalf("vm delete: %v %s", err, out)
	}
	if out, err := cli(t, bin, a.api, "image", "delete", "bare-copy", "blank", "bare-saved"); err != nil {
		t.Fatalf("image delete: %v %s", err, out)
	}
	waitDomainsGone(t, bin, a.api, "e2e-dev")
}
