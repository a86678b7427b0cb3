package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// The served document is valid OpenAPI 3 (validated by kin-openapi); every
// route the router serves (but the peers' own and the explorer's files) is
// in it and everything in it is served; operation ids are unique; the
// explorer's page and files are served without a token.
func TestOpenAPI_document_matches_routes(t *testing.T) {
	s := New(fakeConfig(newFakeBackend(t, true), Config{}))
	h := s.Handler()
	w := doAs(t, h, "", http.MethodGet, "/api/v1/openapi.json", "")
	if w.Code != http.StatusOK {
		t.Fatalf("openapi.json: %d %s", w.Code, w.Body)
	}
	doc, err := openapi3.NewLoader().LoadFromData(w.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("invalid OpenAPI document: %v", err)
	}
	served := map[string]bool{}
	for _, rt := range s.Routes() {
		if !documented(rt) {
			continue
		}
		id := rt.Method + " " + openAPIPath(rt.Path)
		served[id] = true
		item := doc.Paths.Value(openAPIPath(rt.Path))
		if item == nil || item.GetOperation(rt.Method) == nil {
			t.Errorf("%s is served but not documented", id)
		}
	}
	ids := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			id := method + " " + path
			if !served[id] {
				t.Errorf("%s is documented but not served", id)
			}
			if other, dup := ids[op.OperationID]; dup {
				t.Errorf("operationId %s of %s is also %s's", op.OperationID, id, other)
			}
			ids[op.OperationID] = id
			if op.Responses.Value("401") == nil && !openRoutes[method+" "+strings.NewReplacer("{", ":", "}", "").Replace(path)] {
				t.Errorf("%s documents no 401", id)
			}
		}
	}
	if len(routeDocs()) != len(served) {
		t.Errorf("routeDocs has %d entries for %d routes: remove the stale ones", len(routeDocs()), len(served))
	}
	deploy := doc.Paths.Value("/api/v1/namespaces/{namespace}/vms").Post
	if deploy.RequestBody.Value.Content.Get("application/json").Example == nil {
		t.Error("the deploy body has no example")
	}
	if doc.Components.SecuritySchemes[securityScheme].Value.Type != "apiKey" {
		t.Error("Authorize must take the whole header (an apiKey scheme), not prepend Bearer")
	}
	for _, p := range []string{"/api/v1/swagger", "/api/v1/swagger/swagger-ui-bundle.js", "/api/v1/swagger/swagger-ui.css", "/api/v1/swagger/init.js"} {
		if w := doAs(t, h, "", http.MethodGet, p, ""); w.Code != http.StatusOK || w.Body.Len() == 0 {
			t.Errorf("%s: %d", p, w.Code)
		}
	}
	if w := doAs(t, h, "", http.MethodGet, "/api/v1/swagger/nope.js", ""); w.Code != http.StatusNotFound {
		t.Errorf("a missing explorer file: %d", w.Code)
	}
	var back map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &back); err != nil || back["openapi"] != "3.0.3" {
		t.Fatalf("document: %v %v", back["openapi"], err)
	}
}
