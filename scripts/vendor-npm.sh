#!/bin/sh
# Vendors files of an npm package into the tree (for go:embed), checked
# against the registry's integrity hash, with a VERSION file next to them.
# Usage: scripts/vendor-npm.sh PACKAGE VERSION DEST PATH...
#   scripts/vendor-npm.sh swagger-ui-dist 5.35.0 httpapi/explorer/dist LICENSE NOTICE \
#     swagger-ui-bundle.js swagger-ui-bundle.js.LICENSE.txt swagger-ui.css favicon-32x32.png
#   scripts/vendor-npm.sh @novnc/novnc 1.7.0 httpapi/webui/static/novnc LICENSE.txt AUTHORS core vendor
set -eu
[ $# -ge 4 ] || { sed -n '2,8p' "$0" >&2; exit 2; }
pkg=$1 version=$2 dst=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meta=$(curl -fsS "https://registry.npmjs.org/$pkg/$version")
field() { printf '%s' "$meta" | python3 -c "import json,sys; print(json.load(sys.stdin)['dist']['$1'])"; }
curl -fsS -o "$tmp/pkg.tgz" "$(field tarball)"
got="sha512-$(openssl dgst -sha512 -binary "$tmp/pkg.tgz" | base64 -w0)"
[ "$got" = "$(field integrity)" ] || { echo "integrity mismatch for $pkg@$version" >&2; exit 1; }
tar -xzf "$tmp/pkg.tgz" -C "$tmp"
rm -rf "$dst"
mkdir -p "$dst"
for f in "$@"; do
	cp -R "$tmp/package/$f" "$dst/"
done
echo "$pkg $version" > "$dst/VERSION"
echo "$pkg $version vendored into $dst"
