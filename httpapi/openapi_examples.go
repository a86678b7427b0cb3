package httpapi

import (
	"reflect"

	"github.com/svc-project/svc/api"
)

func ptr[T any](v T) *T { return &v }

// examples are the request bodies the explorer fills in for the main calls.
func examples() map[reflect.Type]any {
	return map[reflect.Type]any{
		reflect.TypeOf(api.DeployRequest{}): api.DeployRequest{
			Name: "ci-runner", Image: "mini-linux", CPU: ptr(2), Memory: ptr(4.0), Tag: "ssd", ReservedPorts: "8080:80",
			CustomMetadata: map[string]string{"team": "build"},
		},
		reflect.TypeOf(api.VMConfig{}):                  api.VMConfig{Name: "runner", Image: "mini-linux", CPU: 2, Memory: 4},
		reflect.TypeOf(api.ExecRequest{}):               api.ExecRequest{Action: "stop"},
		reflect.TypeOf(api.PushRequest{}):               api.PushRequest{ImageReference: "registry.example.com:5000/team/runner:v1"},
		reflect.TypeOf(api.PullRequest{}):               api.PullRequest{NewName: "ubuntu"},
		reflect.TypeOf(api.RegistryCredentialRequest{}): api.RegistryCredentialRequest{Server: "registry.example.com:5000", Username: "ci", Password: "secret"},
		reflect.TypeOf(api.GenerateImageRequest{}):      api.GenerateImageRequest{Name: "blank", Size: "20G", Description: "an empty disk for an install"},
		reflect.TypeOf(api.TokenRequest{}):              api.TokenRequest{Duration: "720h"},
	}
}
