package main

// routeCommands names, for each route of the API, the command that calls
// it ("svc " is left out). A test walks the served OpenAPI document and
// the command tree and fails on a route without a command, a command that
// does not exist, or an entry for a route that is gone.
func routeCommands() map[string]string {
	return map[string]string{
		"GET /api/v1/cluster-info":   "cluster info",
		"GET /api/v1/openapi.json":   "cluster openapi",
		"GET /api/v1/swagger":        "cluster explorer",
		"GET /metrics":               "cluster metrics",
		"POST /api/v1/upload/cert":   "cluster cert",
		"GET /api/v1/remotecatalogs": "remote catalogs",
		"PUT /api/v1/remotecatalogs": "remote catalogs",

		"GET /api/v1/namespaces":                                                     "namespace list",
		"POST /api/v1/namespaces":                                                    "namespace create",
		"GET /api/v1/namespaces/{namespace}":                                         "namespace get",
		"DELETE /api/v1/namespaces/{namespace}":                                      "namespace delete",
		"GET /api/v1/namespaces/{namespace}/rolebindings":                            "rb list-subjects",
		"POST /api/v1/namespaces/{namespace}/rolebindings/add-subject":               "rb add-subject",
		"POST /api/v1/namespaces/{namespace}/rolebindings/remove-subject":            "rb remove-subject",
		"GET /api/v1/namespaces/{namespace}/nodes":                                   "node list",
		"POST /api/v1/namespaces/{namespace}/nodes/{name}/tag":                       "node tag",
		"POST /api/v1/namespaces/{namespace}/nodes/{name}/untag":                     "node untag",
		"POST /api/v1/namespaces/{namespace}/nodes/{name}/namespace":                 "node namespace",
		"GET /api/v1/namespaces/{namespace}/serviceaccounts":                         "sa list",
		"POST /api/v1/namespaces/{namespace}/serviceaccounts/{serviceaccount}":       "sa create",
		"DELETE /api/v1/namespaces/{namespace}/serviceaccounts/{serviceaccount}":     "sa delete",
		"POST /api/v1/namespaces/{namespace}/serviceaccounts/{serviceaccount}/token": "sa token",

		"GET /api/v1/namespaces/{namespace}/vms":                     "vm list",
		"POST /api/v1/namespaces/{namespace}/vms":                    "vm deploy",
		"GET /api/v1/namespaces/{namespace}/vms/{vm}":                "vm get",
		"DELETE /api/v1/namespaces/{namespace}/vms/{vm}":             "vm delete",
		"POST /api/v1/namespaces/{namespace}/vms/{vm}/exec":          "vm start", // also stop, suspend, resume, revert
		"GET /api/v1/namespaces/{namespace}/vms/{vm}/console":        "vm console",
		"GET /api/v1/namespaces/{namespace}/vms/{vm}/run":            "vm run",
		"POST /api/v1/namespaces/{namespace}/vms/{vm}/run":           "vm run",
		"GET /api/v1/namespaces/{namespace}/vms/{vm}/port-forward":   "vm port-forward",
		"POST /api/v1/namespaces/{namespace}/vms/{vm}/resize":        "vm resize",
		"POST /api/v1/namespaces/{namespace}/vms/{vm}/commit":        "vm commit",
		"POST /api/v1/namespaces/{namespace}/vms/{vm}/save":          "vm save",
		"POST /api/v1/namespaces/{namespace}/vms/{vm}/push":          "vm push",
		"GET /api/v1/namespaces/{namespace}/vmconfigs":               "vmconfig list",
		"POST /api/v1/namespaces/{namespace}/vmconfigs":              "vmconfig create",
		"GET /api/v1/namespaces/{namespace}/vmconfigs/{vmconfig}":    "vmconfig get",
		"DELETE /api/v1/namespaces/{namespace}/vmconfigs/{vmconfig}": "vmconfig delete",
		"PATCH /api/v1/namespaces/{namespace}/vmconfigs/{vmconfig}":  "vmconfig warm",
		"POST /api/v1/namespaces/{namespace}/images/{image}/cache":   "image cache add",
		"GET /api/v1/namespaces/{namespace}/images/{image}/cache":    "image cache list",
		"DELETE /api/v1/namespaces/{namespace}/images/{image}/cache": "image cache remove",

		"GET /api/v1/namespaces/{namespace}/images":                      "image list",
		"POST /api/v1/namespaces/{namespace}/images":                     "image generate",
		"GET /api/v1/namespaces/{namespace}/images/{image}":              "image get",
		"DELETE /api/v1/namespaces/{namespace}/images/{image}":           "image delete",
		"POST /api/v1/namespaces/{namespace}/images/{image}/copy":        "image copy",
		"POST /api/v1/namespaces/{namespace}/images/{image}/description": "image describe",
		"GET /api/v1/namespaces/{namespace}/images/{image}/download":     "image download",
		"POST /api/v1/namespaces/{namespace}/images/{image}/push":        "image push",
		"POST /api/v1/namespaces/{namespace}/upload/image":               "image upload",
		"GET /api/v1/namespaces/{namespace}/isos":                        "iso list",
		"GET /api/v1/namespaces/{namespace}/isos/{iso}":                  "iso get",
		"DELETE /api/v1/namespaces/{namespace}/isos/{iso}":               "iso delete",
		"POST /api/v1/namespaces/{namespace}/isos/{iso}/copy":            "iso copy",
		"POST /api/v1/namespaces/{namespace}/isos/{iso}/description":     "iso describe",
		"POST /api/v1/namespaces/{namespace}/upload/iso":                 "iso upload",

		"GET /api/v1/namespaces/{namespace}/registrycredentials":               "regcred list",
		"POST /api/v1/namespaces/{namespace}/registrycredentials":              "regcred add",
		"DELETE /api/v1/namespaces/{namespace}/registrycredentials/{registry}": "regcred remove",
		"GET /api/v1/namespaces/{namespace}/remoteimages":                      "remote list",
		"POST /api/v1/namespaces/{namespace}/remoteimages/{remoteimage}/pull":  "remote pull",
		"POST /api/v1/namespaces/{namespace}/remoteisos/{remoteiso}/pull":      "remote pull", // --iso
		"GET /api/v1/namespaces/{namespace}/jobs":                              "job list",
		"GET /api/v1/namespaces/{namespace}/jobs/{job}":                        "job get",
	}
}
