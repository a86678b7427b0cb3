package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/httpapi/explorer"
	"github.com/svc-project/svc/httpapi/webui"
)

// FrameRule is the CSP rule every page carries: no site may frame it.
const FrameRule = "frame-ancestors 'none'"

// Where the pages for browsers are served: the API explorer and the web UI.
const (
	explorerPath   = "/api/v1/swagger"
	uiPath         = "/ui"
	openAPIDocPath = "/api/v1/openapi.json"
)

// pageRoutes serves the OpenAPI document, the explorer and the web UI, all
// without a token (the pages are where a user pastes one). They are
// registered last, so that the document, built at the first request, sees
// every route.
func (s *Server) pageRoutes() {
	var once sync.Once
	var body []byte
	var buildErr error
	s.handle(Route{Method: http.MethodGet, Path: openAPIDocPath, Rule: RuleOpen}, func(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
		once.Do(func() {
			doc, err := s.OpenAPI()
			if err == nil {
				body, err = json.MarshalIndent(doc, "", "  ")
			}
			buildErr = err
		})
		if buildErr != nil {
			return fmt.Errorf("build the OpenAPI document: %w", buildErr)
		}
		w.Header().Set("Content-Type", "application/json")
		_, err := w.Write(body)
		return err
	})
	s.page(explorerPath, explorer.Handler(explorerPath, openAPIDocPath))
	s.page(uiPath, webui.Handler(uiPath))
}

// page serves a page at base and its files under base + "/". No page may
// be framed by another site (clickjacking a signed-in user): every answer
// says so in both the old header and the CSP rule, which a page's handler
// extends with its own policy.
func (s *Server) page(base string, h http.Handler) {
	serve := func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", FrameRule)
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
		return nil
	}
	s.handle(Route{Method: http.MethodGet, Path: base, Rule: RuleOpen}, serve)
	s.handle(Route{Method: http.MethodGet, Path: base + "/*file", Rule: RuleOpen}, serve)
}

// documented reports whether the OpenAPI document describes a route: all
// but the peers' own routes, the pages' files and the web UI (a page, not
// part of the API; the explorer is listed as the API's own description).
func documented(rt Route) bool {
	return !strings.HasPrefix(rt.Path, internalPrefix) && !strings.Contains(rt.Path, "*") && rt.Path != uiPath
}
