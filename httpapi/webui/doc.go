// Package webui serves the web UI at /ui/: a small page (plain JavaScript,
// no build step) that signs in with a pasted token kept in the browser's
// session storage and uses only the public API, plus the VM console in the
// page through noVNC (npm's @novnc/novnc, vendored with its license in
// static/novnc by scripts/vendor-npm.sh). Everything is embedded: no CDN.
package webui
