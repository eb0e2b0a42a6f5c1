#!/usr/bin/env bash
# Generates the excerpts that docs/guides/plan-review.md shows, by running the
# commands: a real `terraform plan` of a scope change (foo/test-app 19 -> 13
# clusters) and a real `terraform-provider-meshscope diff` of the Sidecars the
# configuration renders before and after it. Offline: terraform loads the provider
# through dev_overrides, with no init and no registry.
#
# Usage: generate.sh [PROVIDER_BINARY [TERRAFORM]]
# Without PROVIDER_BINARY the provider is built from this repository. The
# excerpts are written to examples/plan-review/output/ (or to $PLAN_REVIEW_OUT,
# to compare a fresh run with the committed excerpts); then run `make docs`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
terraform=${2:-terraform}
out=${PLAN_REVIEW_OUT:-$here/output}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -n "${1:-}" ]; then
  bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
else
  mkdir -p "$work/bin"
  (cd "$root" && go build -o "$work/bin/terraform-provider-meshscope" .)
  bin="$work/bin/terraform-provider-meshscope"
fi

cat >"$work/terraformrc" <<RC
provider_installation {
  dev_overrides {
    "meshscope/meshscope" = "$(dirname "$bin")"
  }
  direct {}
}
RC
export TF_CLI_CONFIG_FILE="$work/terraformrc" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1

# The configuration reads ../seed/manifests: keep that layout in the copy, so the
# state stays out of the repository.
mkdir -p "$work/seed" "$work/plan-review"
cp -R "$root/examples/seed/manifests" "$work/seed/manifests"
cp "$here"/*.tf "$here"/*.tfvars "$work/plan-review/"
tf() { "$terraform" -chdir="$work/plan-review" "$@"; }

# run LOG CMD...: runs a step, and shows its output only when it fails.
run() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 || { cat "$log" >&2; echo "generate.sh: failed: $*" >&2; exit 1; }
}

# Before the change, and the manifests a GitOps repository would hold then.
run "$work/apply-before.log" tf apply -input=false -no-color -auto-approve -var-file=before.tfvars
mkdir -p "$work/repo/base" "$work/repo/head"
cp "$root"/examples/seed/manifests/*.yaml "$work/repo/base/"
cp "$root"/examples/seed/manifests/*.yaml "$work/repo/head/"
tf output -raw sidecars >"$work/repo/base/sidecars.yaml"

# The change, as terraform plan shows it.
run "$work/plan.log" tf plan -input=false -no-color -out="$work/change.tfplan"
# Keep the plan proper: from the resource changes to the summary line. This
# drops the dev_overrides warning, which names a temporary directory.
awk '
  /^(Terraform|OpenTofu) will perform the following actions:/ { on = 1 }
  on { print }
  on && /^Plan: / { exit }
' "$work/plan.log" >"$work/plan.excerpt"
grep -q 'expected_clusters *= *19 -> 13' "$work/plan.excerpt" || {
  cat "$work/plan.log" >&2
  echo "generate.sh: the plan does not show expected_clusters = 19 -> 13" >&2
  exit 1
}

# After the change.
run "$work/apply-after.log" tf apply -input=false -no-color "$work/change.tfplan"
tf output -raw sidecars >"$work/repo/head/sidecars.yaml"

# The same change as a GitOps pull request sees it, without Terraform.
diff_cmd() {
  local rc=0
  (cd "$work/repo" && "$bin" diff --base base --head head "$@") || rc=$?
  if [ "$rc" -ne 3 ]; then
    echo "generate.sh: diff $* exited $rc, want 3 (changes)" >&2
    exit 1
  fi
}

mkdir -p "$out"
{
  echo '$ terraform apply -var-file=before.tfvars   # foo/test-app may call every namespace'
  echo '$ terraform plan                            # foo/test-app calls only the control plane'
  echo
  cat "$work/plan.excerpt"
} >"$out/plan.txt"

{
  echo '$ terraform-provider-meshscope diff --base base --head head'
  diff_cmd
  echo '$ echo $?'
  echo 3
} >"$out/diff.txt"

diff_cmd -o markdown >"$out/diff.md"

echo "wrote $out/plan.txt, $out/diff.txt and $out/diff.md; run 'make docs' to render docs/guides/plan-review.md"
