package main

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/svc-project/svc/testkit/testcluster"
)

// Every route of the API (as the served OpenAPI document lists them) has a
// command, every command named exists, and no entry is left for a route
// that is gone. The Kubernetes-style door's routes (tag kubernetes) are
// Kubernetes clients' (kubectl, after svc config kubeconfig), not the CLI's.
func TestCLI_covers_every_route(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	resp, err := http.Get("http://" + c.Members[0].Peer.APIAddr() + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	root, commands := newRootCmd(), routeCommands()
	served := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			var tagged struct{ Tags []string }
			if json.Unmarshal(op, &tagged) == nil && slices.Contains(tagged.Tags, "kubernetes") {
				continue
			}
			id := strings.ToUpper(method) + " " + path
			served[id] = true
			name, ok := commands[id]
			if !ok {
				t.Errorf("%s has no command", id)
				continue
			}
			cmd, _, err := root.Find(strings.Fields(name))
			if err != nil || cmd.CommandPath() != "svc "+name || cmd.RunE == nil {
				t.Errorf("%s: the command %q does not exist", id, name)
			}
		}
	}
	for id := range commands {
		if !served[id] {
			t.Errorf("routeCommands lists %s, which the API does not serve", id)
		}
	}
}

// The commands of the cluster's documents print them.
func TestCLI_cluster_documents(t *testing.T) {
	t.Setenv("SVC_CONFIG", t.TempDir()+"/config.json")
	c := testcluster.New(t, 1, testcluster.Options{})
	url, token := "http://"+c.Members[0].Peer.APIAddr(), c.Token("admin", true)
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "openapi"}, `"openapi": "3.0.3"`},
		{[]string{"cluster", "metrics"}, "go_goroutines"},
		{[]string{"cluster", "explorer"}, url + "/api/v1/swagger"},
	} {
		out, err := runSvc(t, url, token, "", step.args...)
		if err != nil || !strings.Contains(out, step.want) {
			t.Errorf("svc %s: %v\n%.300s", strings.Join(step.args, " "), err, out)
		}
	}
	if _, err := runSvc(t, url, token, "", "cluster", "cert"); err == nil {
		t.Error("cert without --cert and --key succeeded")
	}
}
