package kube

import (
	"context"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	kproto "k8s.io/kube-openapi/pkg/util/proto"
	"sigs.k8s.io/yaml"
)

// The door's OpenAPI documents are what Kubernetes' own readers take: each
// v3 document is valid OpenAPI 3.0, the v2 protobuf is the gnostic
// Document kubectl decodes and kube-openapi reads into models, and every
// kind of every group has its definition, marked with its group, version
// and kind (what kubectl looks a kind up by).
func TestOpenAPI_documents_read_as_kubectl_reads_them(t *testing.T) {
	d := New(Config{})
	docs, err := d.openAPI()
	if err != nil {
		t.Fatal(err)
	}
	for path, b := range docs.gvs {
		doc, err := openapi3.NewLoader().LoadFromData(b)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if err := doc.Validate(context.Background()); err != nil {
			t.Fatalf("%s is no valid OpenAPI 3.0: %v", path, err)
		}
	}
	var pb openapiv2.Document
	if err := proto.Unmarshal(docs.v2pb, &pb); err != nil {
		t.Fatal(err)
	}
	models, err := kproto.NewOpenAPIData(&pb)
	if err != nil {
		t.Fatalf("kube-openapi reads the v2 document: %v", err)
	}
	gvks := map[string][]string{} // kind -> its groups
	for _, name := range models.ListModels() {
		s := models.LookupModel(name)
		ext, ok := s.GetExtensions()["x-kubernetes-group-version-kind"].([]any)
		if !ok {
			continue
		}
		for _, e := range ext {
			m, _ := e.(map[any]any)
			if m == nil {
				b, _ := yaml.Marshal(e)
				t.Fatalf("%s: a group-version-kind of another shape: %s", name, b)
			}
			gvks[m["kind"].(string)] = append(gvks[m["kind"].(string)], m["group"].(string)+"/"+m["version"].(string))
		}
	}
	for _, res := range d.resources {
		for _, gv := range []string{OrkaGroup + "/" + Version, SvcGroup + "/" + Version} {
			if !slices.Contains(gvks[res.kind], gv) {
				t.Errorf("%s of %s has no definition: %v", res.kind, gv, gvks)
			}
		}
	}
	if !slices.Contains(gvks["Pod"], "/v1") {
		t.Errorf("the core pods have no definition: %v", gvks)
	}
}
