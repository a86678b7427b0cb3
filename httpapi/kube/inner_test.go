package kube

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/svc-project/svc/api"
)

func TestSplitEvent_lines(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       api.WatchEvent
		ok         bool
	}{
		{"an event", `{"type":"ADDED","object":{"name":"a","x":{"resourceVersion":"1"}},"resourceVersion":"42"}` + "\n",
			api.WatchEvent{Type: "ADDED", Object: json.RawMessage(`{"name":"a","x":{"resourceVersion":"1"}}`), ResourceVersion: "42"}, true},
		{"a bookmark (no object)", `{"type":"BOOKMARK","resourceVersion":"42"}`, api.WatchEvent{}, false},
		{"fields in another order", `{"object":{},"type":"ADDED","resourceVersion":"42"}`, api.WatchEvent{}, false},
		{"a type of other letters", `{"type":"added","object":{},"resourceVersion":"42"}`, api.WatchEvent{}, false},
		{"a version that is no number", `{"type":"ADDED","object":{},"resourceVersion":"4x"}`, api.WatchEvent{}, false},
		{"an object that is no object", `{"type":"ADDED","object":[1],"resourceVersion":"4"}`, api.WatchEvent{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := splitEvent([]byte(tc.line))
			if ok != tc.ok || got.Type != tc.want.Type || string(got.Object) != string(tc.want.Object) || got.ResourceVersion != tc.want.ResourceVersion {
				t.Fatalf("got %+v (%s) %v, want %+v %v", got, got.Object, ok, tc.want, tc.ok)
			}
			if !ok {
				return
			}
			var dec api.WatchEvent // what decoding the line whole gives
			if err := json.Unmarshal([]byte(tc.line), &dec); err != nil || dec.Type != got.Type || string(dec.Object) != string(got.Object) || dec.ResourceVersion != got.ResourceVersion {
				t.Fatalf("decoded whole: %+v %v", dec, err)
			}
		})
	}
}

func TestWatchEvents_next_events_and_flushes(t *testing.T) {
	in := `{"type":"ADDED","object":{"name":"a"},"resourceVersion":"7"}` + "\n\n" + `{"type":"BOOKMARK","resourceVersion":"8"}` + "\n"
	e := &watchEvents{r: bufio.NewReader(strings.NewReader(in))}
	var got []string
	for {
		ev, flushed, err := e.next()
		if err != nil {
			break
		}
		if flushed {
			got = append(got, "flush")
			continue
		}
		got = append(got, ev.Type+"@"+ev.ResourceVersion)
	}
	if want := "ADDED@7 flush BOOKMARK@8"; strings.Join(got, " ") != want {
		t.Fatalf("%q, want %q", strings.Join(got, " "), want)
	}
}

func TestRenderCache_once_per_event_and_caller_namespace(t *testing.T) {
	d := New(Config{})
	res := vmiResource()
	call := func(ns string) *call { return &call{d: d, res: res, gv: "orka.macstadium.com/v1", ns: ns} }
	ev := api.WatchEvent{Type: "ADDED", Object: json.RawMessage(`{"name":"vm-a","status":"Running"}`), ResourceVersion: "5"}
	first, err := d.rendered.render(call("orka-default"), ev)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := d.rendered.render(call("orka-default"), ev)
	if &first.line[0] != &again.line[0] {
		t.Error("the same event for the same call was rendered twice")
	}
	other, _ := d.rendered.render(call("svc-default"), ev)
	for _, tc := range []struct {
		r  rendered
		ns string
	}{{first, "orka-default"}, {other, "svc-default"}} {
		if m := tc.r.obj.meta(); m.Namespace != tc.ns || m.ResourceVersion != "5" || m.Name != "vm-a" {
			t.Errorf("rendered %s/%s at %s, want %s/vm-a at 5", m.Namespace, m.Name, m.ResourceVersion, tc.ns)
		}
		if !strings.Contains(string(tc.r.line), `"namespace":"`+tc.ns+`"`) {
			t.Errorf("line %s does not name %s", tc.r.line, tc.ns)
		}
	}
	changed := ev
	changed.Object = json.RawMessage(`{"name":"vm-a","status":"Stopped"}`)
	if r, _ := d.rendered.render(call("orka-default"), changed); !strings.Contains(string(r.line), "Stopped") {
		t.Errorf("another object at the same version came back as the first: %s", r.line)
	}
}
