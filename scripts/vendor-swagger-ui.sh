#!/bin/sh
# Vendors the files of npm's swagger-ui-dist that the API explorer embeds
# (httpapi/explorer/dist), checked against the registry's integrity hash.
# Usage: scripts/vendor-swagger-ui.sh [VERSION]
set -eu
version=${1:-5.35.0}
dst=$(dirname "$0")/../httpapi/explorer/dist
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meta=$(curl -fsS "https://registry.npmjs.org/swagger-ui-dist/$version")
tarball=$(printf '%s' "$meta" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dist"]["tarball"])')
integrity=$(printf '%s' "$meta" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dist"]["integrity"])')
curl -fsS -o "$tmp/pkg.tgz" "$tarball"
got="sha512-$(openssl dgst -sha512 -binary "$tmp/pkg.tgz" | base64 -w0)"
[ "$got" = "$integrity" ] || { echo "integrity mismatch: $got != $integrity" >&2; exit 1; }
tar -xzf "$tmp/pkg.tgz" -C "$tmp"
mkdir -p "$dst"
for f in LICENSE NOTICE swagger-ui-bundle.js swagger-ui-bundle.js.LICENSE.txt swagger-ui.css favicon-32x32.png; do
	cp "$tmp/package/$f" "$dst/$f"
done
echo "$version" > "$dst/VERSION"
echo "swagger-ui-dist $version vendored into $dst"
