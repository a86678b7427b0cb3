package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/testkit/poll"
	"github.com/svc-project/svc/testkit/syncbuf"
	"github.com/svc-project/svc/testkit/testcluster"
)

// svc node drain cordons the node, lists its VMs with their owners and,
// with --wait, returns once the last is deleted; quotas and ttl through
// the CLI.
func TestCLI_drain_quota_ttl(t *testing.T) {
	c, url, token := clusterWithVM(t, testcluster.Options{})
	node := c.Members[0].Name
	cl := c.Client(c.Members[0])
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	var out syncbuf.Buffer // what the drain has printed so far
	go func() {
		root := newRootCmd()
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs([]string{"--api-url", url, "--token", token, "node", "drain", node, "--wait", "--timeout", "1m"})
		err := root.ExecuteContext(context.Background())
		done <- result{out.String(), err}
	}()
	// The drain has cordoned the node and listed its VMs before it waits:
	// only then is web-1 deleted (deleted sooner, the drain rightly finds
	// no VM to list).
	if err := poll.Until(context.Background(), 30*time.Second, func() error {
		nodes, err := cl.ListNodes(context.Background(), api.DefaultNamespace, false)
		if err != nil || len(nodes) != 1 || nodes[0].Schedulable {
			return errors.New("not cordoned yet")
		}
		if !strings.Contains(out.String(), "web-1") {
			return errors.New("the drain has not listed the node's VMs yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("the drain did not cordon the node and list its VMs: %v\n%s", err, out.String())
	}
	select {
	case r := <-done:
		t.Fatalf("drain returned while web-1 runs: %v\n%s", r.err, r.out)
	default:
	}
	if err := cl.DeleteVM(context.Background(), api.DefaultNamespace, "web-1"); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("drain did not return after the last VM was deleted")
	}
	if r.err != nil || !strings.Contains(r.out, "web-1") || !strings.Contains(r.out, "OWNER") || !strings.Contains(r.out, "drained") {
		t.Fatalf("drain: %v\n%s", r.err, r.out)
	}
	if out, err := runSvc(t, url, token, "", "node", "list"); err != nil || !strings.Contains(out, "cordoned") {
		t.Fatalf("node list: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"uncordon", []string{"node", "uncordon", node}, 0, "takes new VMs"},
		{"deploy with a ttl", []string{"vm", "deploy", "--image", "tiny", "--name", "short", "--cpu", "1", "--ttl", "2h"}, 0, "expires:"},
		{"extend", []string{"vm", "extend", "short", "1h"}, 0, "vm short expires"},
		{"a bad ttl", []string{"vm", "deploy", "--image", "tiny", "--ttl", "soon"}, 2, ""},
		{"set a quota", []string{"namespace", "quota", api.DefaultNamespace, "--vms", "1"}, 0, "vms"},
		{"over it", []string{"vm", "deploy", "--image", "tiny", "--cpu", "1"}, 1, "quota of VMs"},
		{"show it", []string{"namespace", "quota", api.DefaultNamespace}, 0, "QUOTA"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkCLI(t, url, token, "", tc.args, tc.wantCode, tc.want) })
	}
	// svc audit shows the writes above, the refused deploy too.
	if err := poll.Until(context.Background(), 15*time.Second, func() error {
		out, err := runSvc(t, url, token, "", "audit", "--since", "1h")
		if err != nil || !strings.Contains(out, "/quota") || !strings.Contains(out, "403 Forbidden") || !strings.Contains(out, "SUBJECT") {
			return fmt.Errorf("svc audit: %v\n%s", err, out)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// svc vm list --watch prints the list, then a deploy's and a delete's
// events, until Ctrl-C (exit 0).
func TestCLI_vm_list_watch(t *testing.T) {
	c, url, token := clusterWithVM(t, testcluster.Options{})
	cl := c.Client(c.Members[0])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRootCmd()
	var out syncbuf.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"--api-url", url, "--token", token, "vm", "list", "--watch"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	shows := func(what string, re *regexp.Regexp) {
		t.Helper()
		if err := poll.Until(context.Background(), 20*time.Second, func() error {
			if !re.MatchString(out.String()) {
				return fmt.Errorf("no %s in:\n%s", what, out.String())
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	shows("the list", regexp.MustCompile(`(?m)^ADDED +web-1 +Running`))
	one := 1
	if _, err := cl.DeployVM(context.Background(), api.DefaultNamespace, api.DeployRequest{Name: "w2", Image: "tiny", CPU: &one}); err != nil {
		t.Fatal(err)
	}
	shows("the deploy", regexp.MustCompile(`(?m)^ADDED +w2 `))
	if err := cl.DeleteVM(context.Background(), api.DefaultNamespace, "w2"); err != nil {
		t.Fatal(err)
	}
	shows("the delete", regexp.MustCompile(`(?m)^DELETED +w2 `))
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("svc vm list --watch after Ctrl-C: %v", err)
	}
}
