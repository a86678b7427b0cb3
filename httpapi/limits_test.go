package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
)

func subjectsBody(t *testing.T, users int) string {
	t.Helper()
	s := api.Subjects{Users: make([]string, users)}
	for i := range s.Users {
		s.Users[i] = fmt.Sprintf("u%d", i)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every list in a request body has a maximum; beyond it the answer is a 400
// at once, and nothing is applied (the defect: add-subject with 100,000
// users stalled the cluster and was applied after a 504).
func TestLimits_lists_in_bodies(t *testing.T) {
	add := "/api/v1/namespaces/svc-default/rolebindings/add-subject"
	ports := make([]string, api.MaxReservedPorts+1)
	for i := range ports {
		ports[i] = fmt.Sprintf("%d:%d", 30000+i, 80)
	}
	meta := map[string]string{}
	for i := range api.MaxMetadata + 1 {
		meta[fmt.Sprint("k", i)] = "v"
	}
	metaJSON, _ := json.Marshal(meta)
	cases := []struct {
		name, path, body string
		want             int
		wantInBody       string
	}{
		{name: "100,000 users", path: add, body: subjectsBody(t, 100000), want: 400, wantInBody: "at most 1000"},
		{name: "one subject over the maximum", path: add, body: subjectsBody(t, api.MaxSubjectsPerCall+1), want: 400, wantInBody: "at most 1000"},
		{name: "the maximum", path: add, body: subjectsBody(t, api.MaxSubjectsPerCall), want: 200},
		{name: "too many reserved ports", path: "/api/v1/namespaces/svc-default/vms", body: `{"image":"x","reservedPorts":"` + strings.Join(ports, ",") + `"}`, want: 400, wantInBody: "at most 32"},
		{name: "too much metadata", path: "/api/v1/namespaces/svc-default/vmconfigs", body: `{"name":"c","image":"x","customMetadata":` + string(metaJSON) + `}`, want: 400, wantInBody: "at most 64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newFakeBackend(t, true)
			h := New(fakeConfig(b, Config{})).Handler()
			before := b.fsm.Index()
			start := time.Now()
			w := do(t, h, "POST", c.path, c.body)
			if w.Code != c.want || !strings.Contains(w.Body.String(), c.wantInBody) {
				t.Fatalf("code %d, want %d (%s): %s", w.Code, c.want, c.wantInBody, w.Body)
			}
			if c.want >= 400 && b.fsm.Index() != before {
				t.Fatal("a refused call was applied")
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("took %s", took)
			}
		})
	}
}
