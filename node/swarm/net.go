package swarm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
)

// The peers' routes of the swarm (over the fabric).
const (
	chunksPrefix = "/api/v1/internal/chunks/"
	plansPrefix  = "/api/v1/internal/chunkplans/"
	swarmsPrefix = "/api/v1/internal/swarms/"
	// ChunkRoute serves a chunk (?offset=&size=), PlanRoute a held blob's
	// plan, AnnounceRoute the tracker (on the leader).
	ChunkRoute    = chunksPrefix + ":digest"
	PlanRoute     = plansPrefix + ":digest"
	AnnounceRoute = swarmsPrefix + ":key"
)

// ErrNoPlan is wrapped when no seed tells how a blob is cut.
var ErrNoPlan = errors.New("no peer gave the chunk plan")

// maxPlanBody bounds a plan's JSON (MaxChunks chunks).
const maxPlanBody = MaxChunks * 200

// httpNet is Net over the peers' API.
type httpNet struct{ s *Service }

func (n httpNet) Chunk(ctx context.Context, node, scope, digest string, c Chunk, buf []byte) error {
	base := n.s.cfg.PeerURL(node)
	if base == "" {
		return fmt.Errorf("peer %s: no address known", node)
	}
	q := url.Values{"offset": {strconv.FormatInt(c.Offset, 10)}, "size": {strconv.FormatInt(c.Size, 10)}}
	if scope != "" {
		q.Set("scope", scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+chunksPrefix+digest+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := n.s.cfg.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("peer %s: %w", node, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return fmt.Errorf("peer %s: %w", node, ErrBusy)
	default:
		return fmt.Errorf("peer %s: %s", node, resp.Status)
	}
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		return fmt.Errorf("peer %s: chunk at %d: %w", node, c.Offset, err)
	}
	return nil
}

func (n httpNet) Announce(ctx context.Context, key string, a Announce) (Reply, error) {
	name, base, err := n.s.cfg.Leader(ctx)
	if err != nil {
		return Reply{}, err
	}
	if name == n.s.cfg.Name {
		return n.s.tracker.Announce(key, name, a, time.Now())
	}
	var r Reply
	cl := &api.Client{BaseURL: base, HTTP: n.s.cfg.HTTP}
	if err := cl.Do(ctx, http.MethodPost, swarmsPrefix+url.PathEscape(key), a, &r); err != nil {
		return Reply{}, fmt.Errorf("tracker on %s: %w", name, err)
	}
	return r, nil
}

// planFrom asks the seeds, in turn, for the plan of a blob.
func (s *Service) planFrom(ctx context.Context, digest string, size int64, seeds []string) (Plan, error) {
	var errs []string
	for _, node := range seeds {
		p, err := s.askPlan(ctx, node, digest)
		if err == nil && (p.Digest != digest || size > 0 && p.Size != size) {
			err = fmt.Errorf("%w: for %s of %d bytes, not %s of %d", ErrBadPlan, p.Digest, p.Size, digest, size)
		}
		if err == nil {
			err = p.Validate()
		}
		if err == nil {
			return p, nil
		}
		errs = append(errs, err.Error())
		if ctx.Err() != nil {
			break
		}
	}
	return Plan{}, fmt.Errorf("%w of %s: %s", ErrNoPlan, digest, strings.Join(errs, "; "))
}

func (s *Service) askPlan(ctx context.Context, node, digest string) (Plan, error) {
	base := s.cfg.PeerURL(node)
	if base == "" {
		return Plan{}, fmt.Errorf("peer %s: no address known", node)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+plansPrefix+digest, nil)
	if err != nil {
		return Plan{}, err
	}
	resp, err := s.cfg.HTTP.Do(req)
	if err != nil {
		return Plan{}, fmt.Errorf("peer %s: %w", node, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Plan{}, fmt.Errorf("peer %s: %s", node, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPlanBody))
	if err != nil {
		return Plan{}, fmt.Errorf("peer %s: %w", node, err)
	}
	var p Plan
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&p); err != nil {
		return Plan{}, fmt.Errorf("peer %s: %w: %w", node, ErrBadPlan, err)
	}
	return p, nil
}
