package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/testcluster"
)

// Real answers of a cluster decode against the schemas the OpenAPI document
// gives for their route and status, successes and Status errors alike.
func TestOpenAPI_answers_match_schemas(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	cl := c.Client(c.Members[0])
	resp, err := http.Get(cl.BaseURL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	doc, err := openapi3.NewLoader().LoadFromData(body)
	if err != nil {
		t.Fatal(err)
	}
	disk := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(disk, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	kit.Upload(t, cl, "tiny", disk)
	// The check can fail: a node whose name is a number is not a node.
	nodes := doc.Paths.Value("/api/v1/namespaces/{namespace}/nodes").Get.Responses.Status(200).Value.Content.Get("application/json").Schema.Value
	if err := nodes.VisitJSON(map[string]any{"items": []any{map[string]any{"name": 5.0}}}); err == nil {
		t.Fatal("the node list schema accepts a number as a node name")
	}
	const nsp = "/api/v1/namespaces/{namespace}"
	for _, call := range []struct {
		method, route, body string
		code                int
	}{
		{"GET", "/api/v1/cluster-info", "", 200},
		{"GET", "/api/v1/namespaces", "", 200},
		{"GET", nsp, "", 200},
		{"GET", nsp + "/nodes", "", 200},
		{"GET", nsp + "/images", "", 200},
		{"GET", nsp + "/images/{image}", "", 200},
		{"POST", nsp + "/images/{image}/copy", `{"newName":"tiny2"}`, 201},
		{"POST", nsp + "/vmconfigs", `{"name":"cfg","image":"tiny","cpu":1}`, 201},
		{"GET", nsp + "/vmconfigs", "", 200},
		{"POST", nsp + "/vms", `{"name":"vm1","image":"tiny","cpu":1,"memory":1}`, 201},
		{"GET", nsp + "/vms", "", 200},
		{"GET", nsp + "/vms/{vm}", "", 200},
		{"POST", nsp + "/vms/{vm}/exec", `{"action":"stop"}`, 200},
		{"GET", nsp + "/isos", "", 200},
		{"GET", nsp + "/jobs", "", 200},
		{"GET", nsp + "/registrycredentials", "", 200},
		{"POST", nsp + "/registrycredentials", `{"server":"r.example:5000","username":"u","password":"p"}`, 201},
		{"GET", "/api/v1/remotecatalogs", "", 200},
		{"GET", nsp + "/remoteimages", "", 200},
		{"GET", nsp + "/rolebindings", "", 200},
		{"POST", nsp + "/serviceaccounts/{serviceaccount}", "", 201},
		{"GET", nsp + "/serviceaccounts", "", 200},
		{"POST", nsp + "/serviceaccounts/{serviceaccount}/token", `{"duration":"1h"}`, 200},
		{"GET", nsp + "/vms/{vm}", "", 200},
		{"GET", nsp + "/images/nope", "", 404},
		{"POST", nsp + "/vms", `{"cpu":"x"}`, 400},
	} {
		path := strings.NewReplacer("{namespace}", kit.NS, "{image}", "tiny", "{vm}", "vm1", "{serviceaccount}", "bot").Replace(call.route)
		tpl := call.route
		if strings.HasSuffix(path, "/images/nope") {
			tpl = nsp + "/images/{image}"
		}
		code, got := rawCall(t, cl.BaseURL, c.Token("admin", true), call.method, path, call.body)
		if code != call.code {
			t.Fatalf("%s %s: %d, want %d: %s", call.method, path, code, call.code, got)
		}
		op := doc.Paths.Value(tpl).GetOperation(call.method)
		if op == nil {
			t.Fatalf("%s %s is not documented", call.method, tpl)
		}
		r := op.Responses.Status(code)
		if r == nil || r.Value == nil {
			t.Fatalf("%s %s: status %d is not documented", call.method, tpl, code)
		}
		schema := r.Value.Content.Get("application/json").Schema.Value
		var v any
		if err := json.Unmarshal(got, &v); err != nil {
			t.Fatalf("%s %s: %v", call.method, path, err)
		}
		if err := schema.VisitJSON(v); err != nil {
			t.Errorf("%s %s (%d) does not match its schema: %v\n%s", call.method, path, code, err, got)
		}
	}
}

func rawCall(t *testing.T, base, token, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
