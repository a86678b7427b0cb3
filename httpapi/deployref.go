package httpapi

import (
	"context"
	"time"

	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/raftfsm"
)

// What a deploy request means is package deploy's (deploy.Resolve); the API
// reads the request, looks nothing up itself, and answers.

// resolveTimeout bounds reading a registry reference (and pulling a
// containerDisk) during a deploy.
const resolveTimeout = 10 * time.Minute

// resolveImage reads a registry reference named by a deploy, answering a
// registry's refusal with a Status that carries its reason.
func (s *vmsAPI) resolveImage(ctx context.Context, ns, ref string) (raftfsm.Image, error) {
	if _, err := ocidisk.ParseUserReference(ref, true, false); err != nil {
		return raftfsm.Image{}, badRequest("field %q: %s", "image", err)
	}
	rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	img, err := s.registries.ResolveImage(rctx, ns, ref, owner(ctx))
	if err != nil {
		return raftfsm.Image{}, registryError(ref, err)
	}
	return img, nil
}
