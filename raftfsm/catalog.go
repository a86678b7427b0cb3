package raftfsm

import (
	"fmt"
	"slices"
	"strings"
)

// MaxCatalogs bounds the remote catalogs of a cluster.
const MaxCatalogs = 32

// CatalogSet replaces the cluster's remote catalogs: OCI repositories
// ("<registry>/<path>") whose tags are listed as remote images and ISOs.
type CatalogSet struct {
	Repositories []string `json:"repositories"`
}

func (s *State) applyCatalogSet(c CatalogSet) (any, error) {
	if len(c.Repositories) > MaxCatalogs {
		return nil, ruleErr(ErrInvalid, "%d repositories, at most %d", len(c.Repositories), MaxCatalogs)
	}
	out := make([]string, 0, len(c.Repositories))
	for _, r := range c.Repositories {
		if err := validRepository(r); err != nil {
			return nil, ruleErr(ErrInvalid, "%s", err)
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	s.Catalogs = out
	return slices.Clone(out), nil
}

// validRepository checks the shape of "<registry>/<path>" (no tag); the
// API checks it fully before it is proposed.
func validRepository(r string) error {
	host, path, ok := strings.Cut(r, "/")
	switch {
	case len(r) > 255:
		return fmt.Errorf("repository %q is longer than 255 characters", r)
	case !ok || host == "" || path == "" || !strings.ContainsAny(host, ".:") && host != "localhost":
		return fmt.Errorf("repository %q is not <registry>/<path>", r)
	case strings.ContainsAny(path, ":@ ") || strings.ToLower(path) != path:
		return fmt.Errorf("repository %q: the path is lowercase and has no tag or digest", r)
	}
	return nil
}

// Catalogs returns the cluster's remote catalogs.
func (f *FSM) Catalogs() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return slices.Clone(f.state.Catalogs)
}
