package kube

import (
	"encoding/json"
	"net/http"
	"path"
	"time"

	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svc-project/svc/api"
)

func (o *Image) meta() *metav1.ObjectMeta   { return &o.ObjectMeta }
func (o *Image) typeMeta() *metav1.TypeMeta { return &o.TypeMeta }

func imageResource() *resource {
	return &resource{
		plural: "images", singular: "image", kind: "Image", svc: "images", watches: true, deletes: true,
		newObject: func() object { return &Image{} },
		convert: func(raw json.RawMessage) (object, bool, error) {
			var img api.Image
			if err := json.Unmarshal(raw, &img); err != nil {
				return nil, false, err
			}
			return imageOf(img), false, nil
		},
		create: createImage,
	}
}

// descriptionKey is the annotation Orka's tools keep an image's
// description in.
const descriptionKey = "orka.macstadium.com/description"

func imageOf(img api.Image) *Image {
	o := &Image{
		ObjectMeta: metav1.ObjectMeta{Name: img.Name, CreationTimestamp: metav1.NewTime(img.CreatedAt)},
		Spec: ImageSpec{
			Size: quantity(img.Size), SpaceUsed: quantity(img.SpaceUsed), Owner: img.Owner,
			Source: img.Source, SourceType: img.SourceType,
		},
		Status: ImageStatus{State: img.State, ErrorMessage: img.ErrorMessage, LastUpdatedTimestamp: img.CreatedAt.UTC().Format(time.RFC3339)},
	}
	if img.Description != "" {
		o.Annotations = map[string]string{descriptionKey: img.Description}
	}
	if img.Type != "" {
		o.Labels = map[string]string{archLabel: img.Type}
	}
	return o
}

// quantity is a size svc writes (1.5G: GiB) as a Kubernetes quantity;
// nil for none.
func quantity(size string) *kresource.Quantity {
	b, err := api.ParseSize(size)
	if err != nil || b <= 0 {
		return nil
	}
	return kresource.NewQuantity(b, kresource.BinarySI)
}

// createImage makes an image the way its spec says: sourceType vm saves
// the VM source as destination (or, without one, commits the VM's disk to
// its own image), local copies the image source, generated makes an
// empty disk of spec.size. The answer is the image as it is then
// (Updating while a save runs); watch status.state to Ready or Failed.
func createImage(c *call, body []byte) {
	var o Image
	if err := json.Unmarshal(body, &o); err != nil {
		writeStatus(c.w, badRequest("the body is no Image: %v", err))
		return
	}
	s, name := o.Spec, o.Name
	var desc *string
	if d, ok := o.Annotations[descriptionKey]; ok {
		desc = &d
	}
	var a *answer
	switch s.SourceType {
	case "vm":
		if s.Source == "" {
			writeStatus(c.w, badRequest("spec.source: name the VirtualMachineInstance to save"))
			return
		}
		srcNS := s.SourceNamespace
		if srcNS == "" {
			srcNS = c.ns
		}
		if c.d.canonical(srcNS) != c.d.canonical(c.ns) {
			writeStatus(c.w, badRequest("spec.sourceNamespace %q: svc keeps a VM's image in the VM's namespace: create the Image in namespace %s", srcNS, srcNS))
			return
		}
		if s.Destination == "" {
			// A commit: the VM's image takes the VM's disk.
			a = c.d.call(c.r, http.MethodPost, c.vmPath(s.Source, "commit"), nil, api.CommitRequest{Description: desc})
			name = ""
			break
		}
		if name != "" && name != s.Destination {
			writeStatus(c.w, badRequest("metadata.name %q and spec.destination %q differ: the saved image is named destination", name, s.Destination))
			return
		}
		name = s.Destination
		a = c.d.call(c.r, http.MethodPost, c.vmPath(s.Source, "save"), nil, api.SaveRequest{ImageName: name, Description: desc})
	case "local":
		a = c.d.call(c.r, http.MethodPost, c.path(s.Source, "copy"), nil, api.CopyRequest{NewName: name, Description: desc})
	case "generated":
		if s.Size == nil {
			writeStatus(c.w, badRequest("spec.size: the size of the empty disk to generate, e.g. 10Gi"))
			return
		}
		req := api.GenerateImageRequest{Name: name, Size: s.Size.String()}
		if desc != nil {
			req.Description = *desc
		}
		if b, ok := s.Size.AsInt64(); ok {
			req.Size = api.FormatSize(b)
		}
		a = c.d.call(c.r, http.MethodPost, c.path(), nil, req)
	default:
		writeStatus(c.w, badRequest("spec.sourceType %q: vm (save or commit a VM), local (copy an image) or generated (an empty disk); pull a remote image with svc's remoteimages", s.SourceType))
		return
	}
	if !a.ok() {
		a.passOn(c.w)
		return
	}
	if name == "" {
		// A commit names no image: the answer says where the VM's is.
		var ref api.StatusURL
		if err := a.decode(&ref); err != nil || ref.StatusURL == "" {
			writeStatus(c.w, internal("a commit answered no image: %v", err))
			return
		}
		name = path.Base(ref.StatusURL)
	}
	got := c.d.call(c.r, http.MethodGet, c.path(name), nil, nil)
	if !got.ok() {
		got.passOn(c.w)
		return
	}
	var img api.Image
	if err := got.decode(&img); err != nil {
		writeStatus(c.w, internal("reading image %q: %v", name, err))
		return
	}
	out := imageOf(img)
	c.finish(out, rv(c.d.cfg.Index()))
	writeJSON(c.w, http.StatusCreated, out)
}

// vmPath is the /api/v1 path of an action on a VM of the call's namespace.
func (c *call) vmPath(vm, action string) string {
	return "/api/v1/namespaces/" + c.ns + "/vms/" + vm + "/" + action
}

// alias is the default namespace's other name now ("": none).
func (d *Door) alias() string {
	if d.cfg.Alias == nil {
		return ""
	}
	return d.cfg.Alias()
}

// canonical is a namespace's own name (the default's for its alias).
func (d *Door) canonical(ns string) string {
	if a := d.alias(); a != "" && ns == a {
		return api.DefaultNamespace
	}
	return ns
}
