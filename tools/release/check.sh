#!/usr/bin/env bash
# check.sh DIST: checks what `make release-snapshot` wrote into DIST as the registries and an
# air-gapped user would read it.
#   - every OS/architecture zip of the build matrix is there, each holding only the binary;
#   - the SHA256SUMS file lists every zip and the manifest, and each sum verifies;
#   - the registry manifest it lists is terraform-registry-manifest.json;
#   - the linux/amd64 binary runs `version` and prints the release's version;
#   - terraform and OpenTofu install the provider from the linux/amd64 zip through a filesystem
#     mirror (provider_installation { filesystem_mirror { ... } }) and plan the seed with it.
# Environment: TOFU (the tofu binary; make tofu builds it), TERRAFORM (default terraform).
set -euo pipefail

dist=${1:?usage: check.sh DIST}
root=$(cd "$(dirname "$0")/../.." && pwd)
name=terraform-provider-meshscope
fail() { echo "check.sh: $*" >&2; exit 1; }
# zipnames ZIP: the names a zip holds, one per line (python3's zipfile: unzip is not on every machine).
zipnames() { python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$1"; }

sums=$(ls "$dist"/${name}_*_SHA256SUMS 2>/dev/null) || fail "no SHA256SUMS in $dist: run make release-snapshot"
version=${sums##*/${name}_}
version=${version%_SHA256SUMS}
echo "check.sh: version $version"

# The matrix of .goreleaser.yml: freebsd, windows, linux and darwin on amd64, 386, arm and
# arm64, without darwin/386, darwin/arm and windows/arm (13 archives).
want=()
for os in freebsd windows linux darwin; do
  for arch in amd64 386 arm arm64; do
    [[ $os/$arch == darwin/386 || $os/$arch == darwin/arm || $os/$arch == windows/arm ]] && continue
    want+=("${name}_${version}_${os}_${arch}.zip")
  done
done
for zip in "${want[@]}"; do
  [[ -f $dist/$zip ]] || fail "missing $zip"
  bin=${name}_v${version}
  [[ $zip == *_windows_* ]] && bin+=.exe
  got=$(zipnames "$dist/$zip")
  [[ $got == "$bin" ]] || fail "$zip holds [$(echo $got)], want only $bin"
done
extra=$(cd "$dist" && ls ${name}_*.zip | sort | comm -23 - <(printf '%s\n' "${want[@]}" | sort))
[[ -z $extra ]] || fail "zips outside the matrix: $extra"
echo "check.sh: ${#want[@]} archives, each holding only its binary"

# The manifest is not written into DIST: the release uploads terraform-registry-manifest.json under
# this name (release.extra_files), and SHA256SUMS lists it (checksum.extra_files).
manifest=${name}_${version}_manifest.json
listed=$(awk '{print $2}' "$sums" | sort)
expected=$(printf '%s\n' "${want[@]}" "$manifest" | sort)
[[ $listed == "$expected" ]] || fail "SHA256SUMS lists [$(echo $listed)], want [$(echo $expected)]"
(cd "$dist" && grep -v "  $manifest\$" "${sums##*/}" | sha256sum --quiet -c -) || fail "a zip's checksum does not verify"
msum=$(awk -v m="$manifest" '$2 == m { print $1 }' "$sums")
[[ $msum == "$(sha256sum <"$root/terraform-registry-manifest.json" | cut -d' ' -f1)" ]] ||
  fail "SHA256SUMS's $manifest is not terraform-registry-manifest.json"
echo "check.sh: SHA256SUMS lists and verifies every archive and the manifest"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
zip=$dist/${name}_${version}_linux_amd64.zip
python3 -m zipfile -e "$zip" "$work/bin"
chmod +x "$work/bin/${name}_v${version}" # zipfile does not restore the mode; terraform's installer does
out=$("$work/bin/${name}_v${version}" version)
[[ $out == *"$version"* ]] || fail "the linux/amd64 binary's version says [$out], want $version"
echo "check.sh: linux/amd64 binary: $out"

# The packed layout of a filesystem mirror: HOSTNAME/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip.
# Terraform resolves meshscope/meshscope on registry.terraform.io, OpenTofu on registry.opentofu.org.
for host in registry.terraform.io registry.opentofu.org; do
  mkdir -p "$work/mirror/$host/meshscope/meshscope"
  cp "$zip" "$work/mirror/$host/meshscope/meshscope/"
done
cat >"$work/cli.tfrc" <<CFG
provider_installation {
  filesystem_mirror {
    path    = "$work/mirror"
    include = ["registry.terraform.io/meshscope/meshscope", "registry.opentofu.org/meshscope/meshscope"]
  }
  direct {
    exclude = ["registry.terraform.io/meshscope/meshscope", "registry.opentofu.org/meshscope/meshscope"]
  }
}
CFG
clients=("${TERRAFORM:-terraform}")
[[ -n ${TOFU:-} ]] && clients+=("$TOFU")
[[ ${#clients[@]} == 2 ]] || fail "TOFU is not set: give the OpenTofu binary (make tofu prints it)"
for client in "${clients[@]}"; do
  dir=$work/seed-$(basename "$client")
  mkdir -p "$dir"
  sed "s|source = \"meshscope/meshscope\"|source  = \"meshscope/meshscope\"\n      version = \"= $version\"|" "$root/examples/seed/main.tf" >"$dir/main.tf"
  grep -q "version = \"= $version\"" "$dir/main.tf" || fail "could not pin the version in the seed's main.tf"
  cp -R "$root/examples/seed/manifests" "$dir/manifests"
  (
    cd "$dir"
    export TF_CLI_CONFIG_FILE=$work/cli.tfrc TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1
    "$client" init -input=false -no-color >init.log 2>&1 || { cat init.log >&2; fail "$client init from the mirror failed"; }
    grep -q "meshscope/meshscope v$version" init.log || { cat init.log >&2; fail "$client did not install v$version"; }
    "$client" plan -input=false -no-color >plan.log 2>&1 || { cat plan.log >&2; fail "$client plan failed"; }
    grep -q "Plan: 2 to add" plan.log || { cat plan.log >&2; fail "$client plan of the seed is not 2 to add"; }
  )
  echo "check.sh: $(TF_CLI_CONFIG_FILE=$work/cli.tfrc "$client" version | grep -m1 -E '^(Terraform|OpenTofu) v') installed v$version from the mirror and planned the seed (2 to add)"
done
