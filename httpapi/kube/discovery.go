package kube

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// groups is /apis: the groups the door serves, one version each.
func (d *Door) groups() metav1.APIGroupList {
	out := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, g := range []string{OrkaGroup, SvcGroup} {
		grp, _ := d.group(g)
		grp.TypeMeta = metav1.TypeMeta{}
		out.Groups = append(out.Groups, grp)
	}
	return out
}

// group is /apis/{name}.
func (d *Door) group(name string) (metav1.APIGroup, bool) {
	if name != OrkaGroup && name != SvcGroup {
		return metav1.APIGroup{}, false
	}
	v := metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + Version, Version: Version}
	return metav1.APIGroup{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:     name, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v,
	}, true
}

// resourceList is /apis/{group}/{version}: the resources and their verbs.
func (d *Door) resourceList(gv string) metav1.APIResourceList {
	out := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
	for _, res := range d.resources {
		r := res.discovery()
		if !strings.HasPrefix(gv, OrkaGroup+"/") {
			// Short names belong to Orka's group alone: the same name in
			// two groups makes kubectl warn at every use of it.
			r.ShortNames = nil
		}
		out.APIResources = append(out.APIResources, r)
	}
	return out
}

// coreResources is /api/v1 as the door serves the core group: the pods
// (registry push jobs) alone.
func coreResources() metav1.APIResourceList {
	return metav1.APIResourceList{
		TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
		APIResources: []metav1.APIResource{podResource().discovery()},
	}
}

// discovery is the resource's entry in its group's resource list.
func (res *resource) discovery() metav1.APIResource {
	verbs := []string{"get", "list"}
	if res.watches {
		verbs = append(verbs, "watch")
	}
	if res.create != nil {
		verbs = append(verbs, "create")
	}
	if res.deletes {
		verbs = append(verbs, "delete")
	}
	return metav1.APIResource{Name: res.plural, SingularName: res.singular, Namespaced: true, Kind: res.kind, Verbs: verbs, ShortNames: res.shortNames}
}
