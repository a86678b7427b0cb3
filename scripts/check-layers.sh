#!/usr/bin/env bash
# Checks that the imports between the tree's top-level folders run one way,
# down the layers below (one line a layer, the highest first; folders on
# one line import none of each other): every import of a production package
# names a package of its own folder or of a layer below. Tests, test kits,
# the cluster-wide tests (e2e/) and the commands are above every layer. Prints each import that runs back
# up and fails on any; with -v, the layers and the count of arrows.
set -euo pipefail
cd "$(dirname "$0")/.."
layers=(
	"peer"
	"httpapi"
	"node deploy"
	"auth raftstore scheduler"
	"hypervisor gossip raftfsm runners"
	"imagestore backup internal api"
)
declare -A floor
for i in "${!layers[@]}"; do
	for f in ${layers[$i]}; do floor[$f]=$((${#layers[@]} - i)); done
done
mod=$(go list -m)
bad=0 arrows=0
declare -A seen
while read -r pkg imports; do
	from=${pkg#"$mod"/}
	top=${from%%/*}
	case $top in cmd | testkit | e2e | scripts) continue ;; esac
	[ -n "${floor[$top]:-}" ] || { echo "check-layers: $from is in no layer: add its folder $top/ to scripts/check-layers.sh"; bad=1; continue; }
	for imp in $imports; do
		case $imp in "$mod"/*) ;; *) continue ;; esac
		to=${imp#"$mod"/}
		dst=${to%%/*}
		[ "$dst" = "$top" ] && continue
		if [ -z "${floor[$dst]:-}" ] || [ "${floor[$dst]}" -ge "${floor[$top]}" ]; then
			echo "check-layers: $from imports $to: $dst/ is not below $top/"
			bad=1
		fi
		[ -n "${seen[$top $dst]:-}" ] || { seen[$top $dst]=1; arrows=$((arrows + 1)); }
	done
done < <(go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...)
if [ "${1:-}" = -v ]; then
	for i in "${!layers[@]}"; do echo "layer $((${#layers[@]} - i)): ${layers[$i]}"; done
	echo "$arrows arrows between folders, none back up"
fi
exit $bad
