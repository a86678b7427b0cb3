package kube

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// create checks a create's body and has the resource make the object.
// Fields the object does not have are refused (400 naming them) as a
// Kubernetes server refuses them with fieldValidation=Strict, which is
// this door's default: a field svc does not know is a setting it would
// not honour. ?fieldValidation=Warn takes the object with a Warning header
// per field, Ignore without.
func (c *call) create() {
	if refusedDryRun(c.w, c.r) {
		return
	}
	body, st := readBody(c.r)
	if st != nil {
		writeStatus(c.w, *st)
		return
	}
	validation := c.r.URL.Query().Get("fieldValidation")
	if !slices.Contains([]string{"", "Strict", "Warn", "Ignore"}, validation) {
		writeStatus(c.w, badRequest("fieldValidation %q: Strict, Warn or Ignore", validation))
		return
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		writeStatus(c.w, badRequest("the body is not a JSON object: %v", err))
		return
	}
	if k, ok := doc["kind"].(string); ok && k != "" && k != c.res.kind {
		writeStatus(c.w, badRequest("the object is a %s, not a %s: POST it to its own resource", k, c.res.kind))
		return
	}
	if v, ok := doc["apiVersion"].(string); ok && v != "" && v != c.gv {
		writeStatus(c.w, badRequest("the object's apiVersion %s is not %s", v, c.gv))
		return
	}
	var unknown []string
	unknownFields(doc, reflect.TypeOf(c.res.newObject()), "", &unknown)
	slices.Sort(unknown)
	if len(unknown) > 0 {
		quoted := make([]string, len(unknown))
		for i, f := range unknown {
			quoted[i] = "unknown field " + strconv.Quote(f)
		}
		switch validation {
		case "", "Strict":
			writeStatus(c.w, badRequest("strict decoding error: %s", strings.Join(quoted, ", ")))
			return
		case "Warn":
			for _, q := range quoted {
				c.w.Header().Add("Warning", "299 - "+strconv.Quote(q))
			}
		}
	}
	if m, ok := doc["metadata"].(map[string]any); ok {
		if ns, ok := m["namespace"].(string); ok && ns != "" && c.d.canonical(ns) != c.d.canonical(c.ns) {
			writeStatus(c.w, badRequest("the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", ns, c.ns))
			return
		}
	}
	c.res.create(c, body)
}

// refusedDryRun answers a call that asks for a dry run (kubectl
// --dry-run=server sends dryRun=All) with 400, as a Kubernetes server does
// for what does not support one: the door's creates and deletes act on
// real VMs and images and have no mode that only checks, and a dry run
// that acted would surprise everyone. It reports whether it answered.
func refusedDryRun(w http.ResponseWriter, r *http.Request) bool {
	v, asked := r.URL.Query()["dryRun"]
	if !asked {
		return false
	}
	writeStatus(w, badRequest("dryRun=%s: svc's Kubernetes door does not support dry runs; nothing was created or deleted (send the call without dryRun to make the change)", strings.Join(v, ",")))
	return true
}

// unknownFields appends to out the paths of v's fields that type t has
// no JSON field for.
func unknownFields(v any, t reflect.Type, prefix string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return // a type written as a string (a time, a quantity)
		}
		known := map[string]reflect.Type{}
		jsonFields(t, known)
		for k, val := range m {
			ft, ok := known[k]
			if !ok {
				*out = append(*out, prefix+k)
				continue
			}
			unknownFields(val, ft, prefix+k+".", out)
		}
	case reflect.Slice:
		items, _ := v.([]any)
		for i, item := range items {
			unknownFields(item, t.Elem(), strings.TrimSuffix(prefix, ".")+"["+strconv.Itoa(i)+"].", out)
		}
	}
}

// jsonFields adds t's JSON field names and types to known, those of its
// inline fields too.
func jsonFields(t reflect.Type, known map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && (name == "" || strings.Contains(opts, "inline")):
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			jsonFields(ft, known)
		case !f.IsExported():
		case name == "":
			known[f.Name] = f.Type
		default:
			known[name] = f.Type
		}
	}
}
