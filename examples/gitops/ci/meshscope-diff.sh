#!/bin/sh
# meshscope-diff.sh BASE_CHECKOUT HEAD_CHECKOUT ENV OUT
#
# The pull-request review of a GitOps repository laid out as examples/gitops: for the overlay of
# environment ENV, on the base branch's checkout and on the pull request's, it puts the Sidecars
# the overlay builds next to the cluster's objects (the inventory) and runs meshscope's diff on the
# two trees. It writes the markdown comment to OUT; its first line is a marker by which CI finds
# the comment it posted before and updates it rather than adding another.
#
# Environment:
#   MESHSCOPE_INVENTORY  the cluster's objects (a directory of YAML), relative to each checkout
#                        or absolute (default: inventory)
#   MESHSCOPE_OBSERVED   an observed-traffic snapshot (`query -o json` output) in the pull
#                        request's checkout; when the file exists, the review flags the observed
#                        calls the change would cut (default: observed.json)
#   MESHSCOPE_SIDECARS   the Sidecars in each checkout (default: mesh/base)
#   MESHSCOPE_SETTINGS   the environments in each checkout (default: settings.yaml)
#
# Exit status: 0 the comment is written (whether or not a proxy changes), 1 errors, 2 bad usage.
set -eu

if [ $# -ne 4 ]; then
  echo "usage: $0 BASE_CHECKOUT HEAD_CHECKOUT ENV OUT" >&2
  exit 2
fi
base_repo=$1 head_repo=$2 env=$3 out=$4
inventory=${MESHSCOPE_INVENTORY:-inventory}
observed=${MESHSCOPE_OBSERVED:-observed.json}
sidecars=${MESHSCOPE_SIDECARS:-mesh/base}
settings=${MESHSCOPE_SETTINGS:-settings.yaml}
marker="<!-- meshscope-diff:$env -->"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for side in base head; do
  repo=$base_repo
  [ "$side" = head ] && repo=$head_repo
  case $inventory in
    /*) src=$inventory ;;
    *) src=$repo/$inventory ;;
  esac
  [ -d "$src" ] || { echo "error: the inventory $src is not a directory: set MESHSCOPE_INVENTORY" >&2; exit 1; }
  mkdir -p "$work/$side"
  cp -R "$src/." "$work/$side/"
  (cd "$repo" && terraform-provider-meshscope render --quiet --stdout -f "$sidecars" --settings "$settings" --env "$env") \
    >"$work/$side/meshscope-sidecars.yaml"
done

set --
if [ -f "$head_repo/$observed" ]; then
  set -- --observed "$head_repo/$observed"
fi
code=0
terraform-provider-meshscope diff --base "$work/base" --head "$work/head" -o markdown "$@" >"$work/diff.md" || code=$?
case $code in
  0) printf '%s\n### meshscope: no proxy changes in %s\n\nNo proxy'"'"'s predicted Envoy configuration changes.\n' "$marker" "$env" >"$out" ;;
  3) { printf '%s\n' "$marker"; cat "$work/diff.md"; } >"$out" ;;
  *) exit 1 ;;
esac
