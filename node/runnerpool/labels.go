package runnerpool

import (
	"slices"
	"strings"

	"github.com/svc-project/svc/raftfsm"
)

// Labels are the labels a pool's runners register with, and so the only
// ones a job may ask for to be served: GitHub's generate-jitconfig
// registers exactly the labels it is given (a JIT runner never runs
// config.sh, which is what adds the default ones), so the pool gives
// those config.sh would have given (self-hosted, the guest's OS and its
// architecture, as GitHub names them) and then its own. A job with
// runs-on: [self-hosted, linux, x64, svc-linux] is served by a pool of
// label svc-linux whose VM config's image is a Linux amd64 one.
func Labels(f *raftfsm.FSM, p raftfsm.RunnerPool) []string {
	out := []string{"self-hosted"}
	if vc, ok := f.VMConfig(p.Namespace, p.VMConfig); ok {
		if img, ok := f.Image(p.Namespace, vc.Image); ok {
			out = append(out, osLabel(img.OS))
			if a := archLabel(img.Arch); a != "" {
				out = append(out, a)
			}
		}
	}
	for _, l := range p.Labels {
		if !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, l) }) {
			out = append(out, l)
		}
	}
	return out
}

// osLabel is GitHub's name of an image's guest OS.
func osLabel(os string) string {
	if os == raftfsm.OSMacOS {
		return "macOS"
	}
	return "Linux"
}

// archLabel is GitHub's name of an image's architecture (Go's names), or
// "" for one GitHub has no label of.
func archLabel(arch string) string {
	switch arch {
	case "amd64", "x86_64":
		return "X64"
	case "arm64", "aarch64":
		return "ARM64"
	case "arm":
		return "ARM"
	case "386":
		return "X86"
	}
	return ""
}
