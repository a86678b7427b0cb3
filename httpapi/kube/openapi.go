package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"
	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// kubectl validates what it sends against the server's OpenAPI (v3, and
// v2 where v3 does not settle it): without one it refuses every create
// ("failed to download openapi") unless told --validate=false. The door
// serves both, built once from the Go types it decodes its objects with,
// so that what kubectl checks is what the door takes:
//   - /openapi/v3: an index of the group versions, each at
//     /openapi/v3/apis/{group}/v1 (and /openapi/v3/api/v1 for the pods), an
//     OpenAPI 3.0 document of its resources' paths and kinds (each kind's
//     schema carries x-kubernetes-group-version-kind);
//   - /openapi/v2: the same as Swagger 2.0, as protobuf (what client-go
//     asks for) or JSON.
// The paths name no PATCH, which the door does not serve: kubectl then
// checks a create's fields against the kinds' schemas itself, and the door
// checks them again (fieldValidation=Strict, its default).

// openAPI is the door's documents, made once.
type openAPI struct {
	index  []byte            // /openapi/v3
	gvs    map[string][]byte // "apis/orka.macstadium.com/v1" -> its document
	v2json []byte
	v2pb   []byte
}

// openAPIv2Proto is the media type of /openapi/v2 as protobuf, as
// Kubernetes answers it (client-go asks for it with an '@' where the '.'
// is: a type Go's mime package, and so client-go, cannot read back).
const openAPIv2Proto = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"

// gvDoc is one group version's resources.
type gvDoc struct {
	path      string // "apis/orka.macstadium.com/v1"
	group     string
	resources []*resource
}

// buildOpenAPI makes the door's documents.
func buildOpenAPI(resources []*resource) (*openAPI, error) {
	gvs := []gvDoc{
		{path: "apis/" + OrkaGroup + "/" + Version, group: OrkaGroup, resources: resources},
		{path: "apis/" + SvcGroup + "/" + Version, group: SvcGroup, resources: resources},
		{path: "api/v1", group: "", resources: []*resource{podResource()}},
	}
	out := &openAPI{gvs: map[string][]byte{}}
	index := map[string]map[string]string{}
	all := newDoc("svc's Kubernetes door")
	for _, gv := range gvs {
		doc := newDoc("svc's Kubernetes door: " + gv.path)
		for _, target := range []*openapi3.T{doc, all} {
			if err := addGroupVersion(target, gv); err != nil {
				return nil, err
			}
			if err := defineStrings(target); err != nil {
				return nil, err
			}
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, err
		}
		out.gvs[gv.path] = b
		sum := sha256.Sum256(b)
		index[gv.path] = map[string]string{"serverRelativeURL": "/openapi/v3/" + gv.path + "?hash=" + strings.ToUpper(hex.EncodeToString(sum[:]))}
	}
	var err error
	if out.index, err = json.Marshal(map[string]any{"paths": index}); err != nil {
		return nil, err
	}
	v2, err := openapi2conv.FromV3(all)
	if err != nil {
		return nil, fmt.Errorf("openapi v2: %w", err)
	}
	if out.v2json, err = json.Marshal(v2); err != nil {
		return nil, err
	}
	pb, err := openapiv2.ParseDocument(out.v2json)
	if err != nil {
		return nil, fmt.Errorf("openapi v2 as protobuf: %w", err)
	}
	if out.v2pb, err = proto.Marshal(pb); err != nil {
		return nil, err
	}
	return out, nil
}

func newDoc(title string) *openapi3.T {
	return &openapi3.T{
		OpenAPI:    "3.0.0",
		Info:       &openapi3.Info{Title: title, Version: Version},
		Paths:      openapi3.NewPaths(),
		Components: &openapi3.Components{Schemas: openapi3.Schemas{}},
	}
}

// addGroupVersion adds gv's kinds and paths to doc.
func addGroupVersion(doc *openapi3.T, gv gvDoc) error {
	gen := openapi3gen.NewGenerator(
		openapi3gen.CreateComponentSchemas(openapi3gen.ExportComponentSchemasOptions{ExportComponentSchemas: true, ExportTopLevelSchema: true}),
		openapi3gen.CreateTypeNameGenerator(definitionName),
		openapi3gen.SchemaCustomizer(kubeSchema),
	)
	version := Version
	prefix := "/apis/" + gv.group + "/" + version
	if gv.group == "" {
		prefix = "/api/" + version
	}
	status, err := gen.NewSchemaRefForValue(&metav1.Status{}, doc.Components.Schemas)
	if err != nil {
		return err
	}
	for _, res := range gv.resources {
		// A kind served in two groups is one definition marked with both
		// (the generator makes it afresh: what it had is kept first).
		var kinds []map[string]string
		if prev := doc.Components.Schemas[definitionName(reflect.TypeOf(res.newObject()))]; prev != nil && prev.Value != nil {
			kinds, _ = prev.Value.Extensions["x-kubernetes-group-version-kind"].([]map[string]string)
		}
		obj, err := gen.NewSchemaRefForValue(res.newObject(), doc.Components.Schemas)
		if err != nil {
			return fmt.Errorf("openapi of %s: %w", res.kind, err)
		}
		gvk := map[string]string{"group": gv.group, "version": version, "kind": res.kind}
		def := doc.Components.Schemas[strings.TrimPrefix(obj.Ref, "#/components/schemas/")]
		if def == nil || def.Value == nil {
			return fmt.Errorf("openapi of %s: no definition for %s", res.kind, obj.Ref)
		}
		if def.Value.Extensions == nil {
			def.Value.Extensions = map[string]any{}
		}
		def.Value.Extensions["x-kubernetes-group-version-kind"] = append(kinds, gvk)
		list := &openapi3.Schema{Type: &openapi3.Types{"object"}, Properties: openapi3.Schemas{
			"apiVersion": openapi3.NewStringSchema().NewRef(), "kind": openapi3.NewStringSchema().NewRef(),
			"items": &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"array"}, Items: obj}},
		}}
		answer := func(code int, s *openapi3.SchemaRef, what string) *openapi3.Responses {
			r := openapi3.NewResponses()
			r.Set(fmt.Sprint(code), &openapi3.ResponseRef{Value: openapi3.NewResponse().WithDescription(what).WithJSONSchemaRef(s)})
			r.Set("default", &openapi3.ResponseRef{Value: openapi3.NewResponse().WithDescription("a Status").WithJSONSchemaRef(status)})
			return r
		}
		op := func(action, summary string, resp *openapi3.Responses, params ...*openapi3.Parameter) *openapi3.Operation {
			o := &openapi3.Operation{Summary: summary, OperationID: action + res.kind, Responses: resp,
				Extensions: map[string]any{"x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk}}
			for _, p := range params {
				o.Parameters = append(o.Parameters, &openapi3.ParameterRef{Value: p})
			}
			return o
		}
		query := func(name, desc string) *openapi3.Parameter {
			return openapi3.NewQueryParameter(name).WithDescription(desc).WithSchema(openapi3.NewStringSchema())
		}
		collection := &openapi3.PathItem{Parameters: openapi3.Parameters{{Value: openapi3.NewPathParameter("namespace").WithSchema(openapi3.NewStringSchema())}}}
		collection.Get = op("list", "list or watch "+res.plural, answer(200, list.NewRef(), "the list"),
			query("labelSelector", "at most 4 KiB and 32 requirements"), query("fieldSelector", "metadata.name, metadata.namespace"),
			query("watch", "true: stream watch events"), query("resourceVersion", "with watch: the changes after it"),
			query("timeoutSeconds", "with watch: end after this long"), query("allowWatchBookmarks", "true: BOOKMARK events"),
			query("sendInitialEvents", "true: ADDED events first"))
		item := &openapi3.PathItem{Parameters: openapi3.Parameters{
			{Value: openapi3.NewPathParameter("namespace").WithSchema(openapi3.NewStringSchema())},
			{Value: openapi3.NewPathParameter("name").WithSchema(openapi3.NewStringSchema())},
		}}
		item.Get = op("get", "read a "+res.singular, answer(200, obj, "the object"))
		if res.create != nil {
			post := op("post", "create a "+res.singular, answer(201, obj, "the object made"),
				query("fieldValidation", "Strict (the default), Warn or Ignore"))
			post.RequestBody = &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(true).WithJSONSchemaRef(obj)}
			collection.Post = post
		}
		if res.deletes {
			item.Delete = op("delete", "delete a "+res.singular, answer(200, status, "a Status of Success"))
		}
		doc.Paths.Set(prefix+"/namespaces/{namespace}/"+res.plural, collection)
		doc.Paths.Set(prefix+"/namespaces/{namespace}/"+res.plural+"/{name}", item)
	}
	return nil
}

// stringTypes are the types that write themselves otherwise than their
// fields say (as strings, mostly), by their definition's name, with their
// schema.
var stringTypes = map[string]*openapi3.Schema{
	definitionName(reflect.TypeOf(kresource.Quantity{})): {Type: &openapi3.Types{"string"}, Description: "A quantity: 10Gi, 500m, 2"},
	definitionName(reflect.TypeOf(metav1.Time{})):        {Type: &openapi3.Types{"string"}, Format: "date-time"},
	definitionName(reflect.TypeOf(metav1.MicroTime{})):   {Type: &openapi3.Types{"string"}, Format: "date-time"},
	// FieldsV1 writes itself as a JSON object of any shape.
	definitionName(reflect.TypeOf(metav1.FieldsV1{})): {Type: &openapi3.Types{"object"}},
}

// defineStrings adds the definitions of the string types doc refers to
// (the generator refers to them by name and leaves them out), and fails
// for any other reference to a definition doc lacks.
func defineStrings(doc *openapi3.T) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	const prefix = `"#/components/schemas/`
	for rest := string(b); ; {
		i := strings.Index(rest, prefix)
		if i < 0 {
			return nil
		}
		rest = rest[i+len(prefix):]
		name, _, _ := strings.Cut(rest, `"`)
		if doc.Components.Schemas[name] != nil {
			continue
		}
		s, ok := stringTypes[name]
		if !ok {
			return fmt.Errorf("openapi: %s is referred to and not defined", name)
		}
		doc.Components.Schemas[name] = s.NewRef()
	}
}

// definitionName names a Go type's schema as Kubernetes names its
// definitions: its package's path turned around ("io.k8s.apimachinery.pkg.
// apis.meta.v1.ObjectMeta"), svc's kinds as Orka's ("com.macstadium.orka.
// v1.VirtualMachineInstance").
func definitionName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pkg := t.PkgPath()
	switch {
	case pkg == reflect.TypeOf(Image{}).PkgPath():
		return "com.macstadium.orka.v1." + t.Name()
	case strings.HasPrefix(pkg, "k8s.io/"):
		return "io.k8s." + strings.ReplaceAll(strings.TrimPrefix(pkg, "k8s.io/"), "/", ".") + "." + t.Name()
	}
	return strings.ReplaceAll(pkg, "/", ".") + "." + t.Name()
}

// kubeSchema gives the types that write themselves as strings the schema
// of what they write: a time, a quantity, a UID (each a string).
func kubeSchema(_ string, t reflect.Type, _ reflect.StructTag, s *openapi3.Schema) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case reflect.TypeOf(metav1.Time{}), reflect.TypeOf(metav1.MicroTime{}):
		*s = openapi3.Schema{Type: &openapi3.Types{"string"}, Format: "date-time"}
	case reflect.TypeOf(kresource.Quantity{}):
		*s = openapi3.Schema{Type: &openapi3.Types{"string"}} // as Kubernetes declares it
	case reflect.TypeOf(types.UID("")):
		*s = openapi3.Schema{Type: &openapi3.Types{"string"}}
	case reflect.TypeOf(metav1.FieldsV1{}):
		*s = openapi3.Schema{Type: &openapi3.Types{"object"}}
	}
	return nil
}

// serveOpenAPI answers /openapi/v3[/...] and /openapi/v2.
func (d *Door) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	docs, err := d.openAPI()
	if err != nil {
		writeStatus(w, internal("the OpenAPI documents: %v", err))
		return
	}
	path := strings.Trim(r.URL.Path, "/")
	switch {
	case path == "openapi/v2":
		if strings.Contains(r.Header.Get("Accept"), "protobuf") {
			w.Header().Set("Content-Type", openAPIv2Proto)
			_, _ = w.Write(docs.v2pb)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(docs.v2json)
	case path == "openapi/v3":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(docs.index)
	default:
		b, ok := docs.gvs[strings.TrimPrefix(path, "openapi/v3/")]
		if !ok {
			writeStatus(w, notFound("the server could not find the requested resource %s", r.URL.Path))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		// The address holds the document's hash: a client keeps it.
		w.Header().Set("Cache-Control", "public, immutable")
		_, _ = w.Write(b)
	}
}
