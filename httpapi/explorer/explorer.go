package explorer

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
)

//go:embed dist page
var files embed.FS

// Handler serves the explorer's page for a request to the page's own path
// (e.g. /api/v1/swagger) and its files for page + "/<file>"; the page reads
// the OpenAPI document at spec (e.g. /api/v1/openapi.json).
func Handler(page, spec string) http.Handler {
	index, _ := files.ReadFile("page/index.html")
	index = bytes.ReplaceAll(index, []byte("{{page}}"), []byte(page))
	initJS, _ := files.ReadFile("page/init.js")
	initJS = bytes.ReplaceAll(initJS, []byte("{{spec}}"), []byte(spec))
	dist, _ := fs.Sub(files, "dist")
	assets := http.StripPrefix(page+"/", http.FileServer(http.FS(dist)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case page, page + "/", page + "/index.html":
			serve(w, "text/html; charset=utf-8", index)
		case page + "/init.js":
			serve(w, "text/javascript; charset=utf-8", initJS)
		default:
			w.Header().Set("Cache-Control", "public, max-age=86400")
			assets.ServeHTTP(w, r)
		}
	})
}

func serve(w http.ResponseWriter, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(body)
}
