package webui

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var files embed.FS

// Handler serves the UI's files under base (e.g. "/ui"); any path that is
// not a file is the page itself, so that a reload on a view works. The
// server sets the headers every page carries (no framing, no sniffing);
// the page itself adds its content policy.
func Handler(base string) http.Handler {
	static, _ := fs.Sub(files, "static")
	fileServer := http.StripPrefix(base+"/", http.FileServer(http.FS(static)))
	index, _ := files.ReadFile("static/index.html")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, base), "/")
		if name == "" || name == "index.html" {
			serveIndex(w, index)
			return
		}
		if _, err := fs.Stat(static, name); err != nil {
			serveIndex(w, index)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		fileServer.ServeHTTP(w, r)
	})
}

func serveIndex(w http.ResponseWriter, index []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'")
	_, _ = w.Write(index)
}
