#!/usr/bin/env bash
# Runs the seed scenario through the real terraform CLI with dev_overrides (no
# registry, no network), then asks the command line of the same binary, and
# checks that the three agree. Usage: demo.sh PROVIDER_BINARY [TERRAFORM]
set -euo pipefail

bin=${1:?usage: demo.sh PROVIDER_BINARY [TERRAFORM]}
terraform=${2:-terraform}
seed=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Terraform loads the freshly built provider from its directory: no init, no registry.
cat >"$work/terraformrc" <<RC
provider_installation {
  dev_overrides {
    "meshscope/meshscope" = "$(dirname "$bin")"
  }
  direct {}
}
RC
export TF_CLI_CONFIG_FILE="$work/terraformrc" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1
# The state and plan stay in the temporary copy, so the repository stays clean.
cp -R "$seed/." "$work/seed"
rm -f "$work/seed/demo.sh"
tf() { "$terraform" -chdir="$work/seed" "$@"; }

section() { printf '\n==== %s ====\n\n' "$*"; }

section "terraform plan: each scope's Sidecar and cluster count are known before apply"
tf plan -input=false -no-color -out="$work/seed.tfplan" >"$work/plan.txt" 2>&1 || { cat "$work/plan.txt"; exit 1; }
# Show the workload scopes as planned; their manifests are printed after apply.
awk '
  /^  # meshscope_workload_scope\./ { inres = 1 }
  inres && /manifest *= <<-EOT/ { print substr($0, 1, index($0, "<<-EOT") - 1) "(the Sidecar YAML, known now; printed below)"; skip = 1; next }
  skip { if ($0 ~ /EOT$/) skip = 0; next }
  inres { print }
  inres && /^    }$/ { inres = 0; print "" }
  /^Plan:/ { print }
' "$work/plan.txt"

section "terraform apply"
tf apply -input=false -no-color "$work/seed.tfplan" 2>&1 | grep -E '^(meshscope_|data\.|Apply complete)' || true

section "clusters per workload, before and after the Sidecars"
tf output -raw report
echo

section "the rendered Sidecars"
tf output -raw sidecars

section "the command line, on the same manifests"
tf output -raw sidecars >"$work/sidecars.yaml"
count() { "$bin" clusters "$@" -o names | wc -l | tr -d ' '; }
fail=0
while read -r workload before after planned; do
  [ -n "$workload" ] || continue
  ns=${workload%%/*}
  echo "\$ terraform-provider-meshscope clusters -f examples/seed/manifests --namespace $ns --labels app=test-app -o names | wc -l"
  before_cli=$(count -f "$seed/manifests" --namespace "$ns" --labels app=test-app)
  echo "$before_cli"
  echo "\$ terraform-provider-meshscope clusters -f examples/seed/manifests -f sidecars.yaml --namespace $ns --labels app=test-app -o names | wc -l"
  after_cli=$(count -f "$seed/manifests" -f "$work/sidecars.yaml" --namespace "$ns" --labels app=test-app)
  echo "$after_cli"
  if [ "$before_cli" = "$before" ] && [ "$after_cli" = "$after" ] && [ "$planned" = "$after" ]; then
    echo "$workload: data source $before -> $after, plan-time expected_clusters $planned, command line $before_cli -> $after_cli: all agree"
  else
    echo "$workload: MISMATCH: data source $before -> $after, expected_clusters $planned, command line $before_cli -> $after_cli" >&2
    fail=1
  fi
  echo
done < <(tf output -raw counts; echo)
exit "$fail"
