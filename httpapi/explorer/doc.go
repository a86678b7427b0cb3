// Package explorer serves the API explorer: Swagger UI (npm's
// swagger-ui-dist, vendored with its license in dist/ by
// scripts/vendor-npm.sh and embedded in the binary, so that clusters
// on private networks need no CDN) pointed at the peer's own openapi.json.
package explorer
