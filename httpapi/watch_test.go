package httpapi

import (
	"slices"
	"testing"
)

func TestTouched_kinds(t *testing.T) {
	closed := func() <-chan struct{} { c := make(chan struct{}); close(c); return c }
	open := func() <-chan struct{} { return make(chan struct{}) }
	for _, tc := range []struct {
		name                       string
		vm, node, image, blob, job <-chan struct{}
		want                       []string
	}{
		{"a VM", closed(), open(), open(), open(), open(), []string{watchVMs, watchNodes}},
		{"a node", open(), closed(), open(), open(), open(), []string{watchVMs, watchNodes}},
		{"a blob", open(), open(), open(), closed(), open(), []string{watchNodes, watchImages}},
		{"a job", open(), open(), open(), open(), closed(), []string{watchJobs}},
		{"everything (a restore)", closed(), closed(), closed(), closed(), closed(), watchKinds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := touched(tc.vm, tc.node, tc.image, tc.blob, tc.job); !slices.Equal(got, tc.want) {
				t.Fatalf("%v, want %v", got, tc.want)
			}
		})
	}
}
