package kube

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/svc-project/svc/api"
)

// create checks a create's body and has the resource make the object.
// Fields the object does not have are refused (400 naming them) as a
// Kubernetes server refuses them with fieldValidation=Strict, which is
// this door's default: a field svc does not know is a setting it would
// not honour. ?fieldValidation=Warn takes the object with a Warning header
// per field, Ignore without.
func (c *call) create() {
	body, err := io.ReadAll(io.LimitReader(c.r.Body, maxBody+1))
	switch {
	case err != nil:
		writeStatus(c.w, badRequest("reading the body: %v", err))
		return
	case len(body) > maxBody:
		writeStatus(c.w, api.NewStatus(http.StatusRequestEntityTooLarge, api.ReasonRequestEntityTooLarge, sprintf("the object is over %d bytes", maxBody)))
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
