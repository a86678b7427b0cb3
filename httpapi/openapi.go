package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"

	"github.com/svc-project/svc/api"
)

// The OpenAPI document is built from the route table (s.routes) and the
// routes' Go wire types (routeDocs), so that it cannot drift from what the
// router serves: a route without a doc entry fails the build of the
// document, and a test checks both ways.

// securityScheme is how the explorer's Authorize sends a token: the whole
// Authorization header, "Bearer <token>", as the spec says (an http/bearer
// scheme would prepend a second "Bearer").
const securityScheme = "bearerToken"

// internalPrefix marks the peers' own routes, left out of the document.
const internalPrefix = "/api/v1/internal/"

// OpenAPI builds the OpenAPI 3 document of the routes the server serves.
func (s *Server) OpenAPI() (*openapi3.T, error) {
	docs := routeDocs()
	schemas := openapi3.Schemas{}
	gen := openapi3gen.NewGenerator(
		openapi3gen.CreateComponentSchemas(openapi3gen.ExportComponentSchemasOptions{ExportComponentSchemas: true, ExportTopLevelSchema: true}),
		openapi3gen.SchemaCustomizer(customizeSchema),
	)
	schemaOf := func(v any) (*openapi3.SchemaRef, error) { return gen.NewSchemaRefForValue(v, schemas) }
	status, err := schemaOf(api.Status{})
	if err != nil {
		return nil, err
	}
	doc := &openapi3.T{
		OpenAPI: "3.0.3",
		Info: &openapi3.Info{
			Title: "svc API", Version: "v1",
			Description: "Every call but cluster-info, openapi.json, the explorer and /metrics needs `Authorization: Bearer <token>`. Errors are a Status body.",
		},
		Servers: openapi3.Servers{{URL: "/"}},
		Paths:   openapi3.NewPaths(),
		Components: &openapi3.Components{
			Schemas: schemas,
			SecuritySchemes: openapi3.SecuritySchemes{securityScheme: {Value: &openapi3.SecurityScheme{
				Type: "apiKey", In: "header", Name: "Authorization",
				Description: "The text `Bearer <token>` (a personal or service account token).",
			}}},
			Responses: openapi3.ResponseBodies{"Error": {Value: openapi3.NewResponse().
				WithDescription("A Status: {apiVersion, kind, status, message, reason, code}").
				WithContent(openapi3.NewContentWithJSONSchemaRef(status))}},
		},
		Security: openapi3.SecurityRequirements{{securityScheme: []string{}}},
	}
	for _, rt := range s.routes {
		if !documented(rt) {
			continue
		}
		path := openAPIPath(rt.Path)
		d, ok := docs[rt.Method+" "+path]
		if !ok {
			return nil, fmt.Errorf("route %s %s has no entry in routeDocs", rt.Method, path)
		}
		op, err := operation(rt, path, d, schemaOf)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", rt.Method, path, err)
		}
		item := doc.Paths.Value(path)
		if item == nil {
			item = &openapi3.PathItem{}
			doc.Paths.Set(path, item)
		}
		item.SetOperation(rt.Method, op)
	}
	return doc, nil
}

// operation describes one route.
func operation(rt Route, path string, d routeDoc, schemaOf func(any) (*openapi3.SchemaRef, error)) (*openapi3.Operation, error) {
	op := openapi3.NewOperation()
	op.Summary, op.OperationID, op.Tags = d.Summary, operationID(rt.Method, path), []string{d.Tag}
	if rt.Rule == RuleOpen {
		op.Security = &openapi3.SecurityRequirements{} // no token
	}
	for _, seg := range strings.Split(path, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			name = strings.TrimSuffix(name, "}")
			op.AddParameter(openapi3.NewPathParameter(name).WithSchema(openapi3.NewStringSchema()))
		}
	}
	for _, q := range d.Query {
		p := openapi3.NewQueryParameter(q.Name).WithDescription(q.Description).WithSchema(openapi3.NewStringSchema())
		op.AddParameter(p)
	}
	switch {
	case d.Body != "":
		content := openapi3.Content{d.Body: openapi3.NewMediaType().WithSchema(openapi3.NewStringSchema().WithFormat("binary"))}
		op.RequestBody = &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(true).WithContent(content)}
	case d.Upload != "":
		form := openapi3.NewObjectSchema().WithProperty(d.Upload, openapi3.NewStringSchema().WithFormat("binary"))
		if d.Upload == "cert" {
			form = form.WithProperty("key", openapi3.NewStringSchema().WithFormat("binary"))
		}
		content := openapi3.NewContentWithFormDataSchema(form)
		if d.Upload != "cert" {
			content["application/octet-stream"] = openapi3.NewMediaType().WithSchema(openapi3.NewStringSchema().WithFormat("binary"))
		}
		op.RequestBody = &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(true).WithContent(content)}
	case d.Req != nil:
		ref, err := schemaOf(d.Req)
		if err != nil {
			return nil, err
		}
		mt := openapi3.NewMediaType().WithSchemaRef(ref)
		if ex, ok := examples()[reflect.TypeOf(d.Req)]; ok {
			mt.Example = ex
		}
		op.RequestBody = &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(true).WithContent(openapi3.Content{"application/json": mt})}
	}
	code := d.Code
	if code == 0 {
		code = http.StatusOK
	}
	ok := openapi3.NewResponse().WithDescription(http.StatusText(code))
	switch {
	case d.Stream != "":
		ok.WithContent(openapi3.Content{d.Stream: openapi3.NewMediaType().WithSchema(openapi3.NewStringSchema().WithFormat("binary"))})
	case d.Resp != nil:
		ref, err := schemaOf(d.Resp)
		if err != nil {
			return nil, err
		}
		ok.WithContent(openapi3.NewContentWithJSONSchemaRef(ref))
	}
	op.Responses = openapi3.NewResponses(openapi3.WithStatus(code, &openapi3.ResponseRef{Value: ok}))
	for _, c := range errorCodes(rt, path) {
		op.Responses.Set(strconv.Itoa(c), &openapi3.ResponseRef{Ref: "#/components/responses/Error"})
	}
	return op, nil
}

// errorCodes are the failures a route answers with a Status.
func errorCodes(rt Route, path string) []int {
	codes := []int{http.StatusBadRequest, http.StatusInternalServerError, http.StatusServiceUnavailable}
	if rt.Rule != RuleOpen {
		codes = append(codes, http.StatusUnauthorized, http.StatusForbidden)
	}
	if strings.Contains(path, "{") {
		codes = append(codes, http.StatusNotFound)
	}
	if rt.Write {
		codes = append(codes, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusGatewayTimeout)
	}
	if rt.Method == http.MethodGet && rt.Path == "/api/v1/namespaces/:namespace/images/:image/download" {
		codes = append(codes, http.StatusConflict, http.StatusRequestedRangeNotSatisfiable)
	}
	slices.Sort(codes)
	return codes
}

// openAPIPath turns httprouter's ":name" and "*name" into "{name}".
func openAPIPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			segs[i] = "{" + name + "}"
		} else if name, ok := strings.CutPrefix(s, "*"); ok {
			segs[i] = "{" + name + "}"
		}
	}
	return strings.Join(segs, "/")
}

// operationID names an operation after its method and path, the
// namespace prefix left out of namespaced routes: "get" + "Vms" + "ByVm".
func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	rest := strings.TrimPrefix(path, "/api/v1")
	if r, ok := strings.CutPrefix(rest, "/namespaces/{namespace}/"); ok {
		rest = r
	}
	for _, seg := range strings.Split(rest, "/") {
		name, param := strings.CutPrefix(seg, "{")
		name = strings.TrimSuffix(name, "}")
		if name == "" {
			continue
		}
		if param {
			b.WriteString("By")
		}
		for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '.' || r == '_' }) {
			r := []rune(part)
			r[0] = unicode.ToUpper(r[0])
			b.WriteString(string(r))
		}
	}
	return b.String()
}

// customizeSchema marks what Go's encoding/json always writes as required,
// and a nil slice or map (written as null) as nullable.
func customizeSchema(_ string, t reflect.Type, tag reflect.StructTag, schema *openapi3.Schema) error {
	if k := t.Kind(); (k == reflect.Slice || k == reflect.Map) && !strings.Contains(tag.Get("json"), "omitempty") && t != reflect.TypeOf(json.RawMessage{}) {
		schema.Nullable = true
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || name == "" || strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
			continue
		}
		if _, ok := schema.Properties[name]; ok && !slices.Contains(schema.Required, name) {
			schema.Required = append(schema.Required, name)
		}
	}
	return nil
}
