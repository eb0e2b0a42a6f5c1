#!/usr/bin/env bash
# testenv.sh: a real control plane for meshscope's acceptance tests, on 127.0.0.1 only.
#
#   testenv.sh build      build etcd, kube-apiserver and istiod (pilot-discovery) from source
#                         through the Go module proxy, once per pinned version
#   testenv.sh up         build, then start etcd, kube-apiserver and istiod, install the Istio
#                         CRDs and write an admin kubeconfig (a no-op when already up)
#   testenv.sh down       stop the processes `up` started, by PID, and nothing else
#   testenv.sh status     exit 0 when all three are running and ready
#   testenv.sh env        print the settings file tests read (KUBECONFIG, xDS address, ...)
#   testenv.sh tofu       build the OpenTofu CLI (the provider's second client) once, print its path
#   testenv.sh client C   the same for client C of the tested matrix (build/C: tofu, tofu-1.10,
#                         terraform-1.9, terraform-1.12)
#   testenv.sh kind-up    the same from a kind cluster and `istioctl install`, for machines with
#   testenv.sh kind-down  Docker (untested on the development machines, which have no Docker)
#
# There is no controller-manager, scheduler or kubelet: tests create Pods and patch their status
# themselves, and start Kubernetes' own EndpointSlice controller for their namespaces
# (StartEndpointSlices in the Go helpers in this directory). Deleted namespaces stay
# Terminating forever, so tests use unique namespace names.
#
# Environment:
#   MESHSCOPE_TESTENV_CACHE  built binaries    (default $HOME/.cache/meshscope-testenv)
#   MESHSCOPE_TESTENV_DIR    pids, logs, certificates, etcd data, kubeconfig
#                            (default /tmp/meshscope-testenv)
#   MESHSCOPE_TESTENV_ETCD_PORT (12379), _ETCD_PEER_PORT (12380), _APISERVER_PORT (16443),
#   _ISTIOD_HTTP_PORT (8080), _ISTIOD_GRPC_PORT (15010), _ISTIOD_SECURE_GRPC_PORT (15012),
#   _ISTIOD_MONITORING_PORT (15014), _ISTIOD_WEBHOOK_PORT (15017), _ISTIOD_CTRLZ_PORT (9876)
#
# istiod's ports are its defaults, so another control plane on the machine (a developer's own,
# another test run) could hold them: `up` refuses to start while any port is taken, naming the
# holder, and gives istiod a CLUSTER_ID of its own (testenv-<random>, in the env file). The Go
# helpers check that ID on /debug/clusterz, and that the istiod that pushed to a probe lists the
# probe's connection, so no test can pass or fail against a foreign istiod.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD_DIR=$HERE/build
CACHE=${MESHSCOPE_TESTENV_CACHE:-$HOME/.cache/meshscope-testenv}
STATE=${MESHSCOPE_TESTENV_DIR:-/tmp/meshscope-testenv}

ETCD_PORT=${MESHSCOPE_TESTENV_ETCD_PORT:-12379}
ETCD_PEER_PORT=${MESHSCOPE_TESTENV_ETCD_PEER_PORT:-12380}
APISERVER_PORT=${MESHSCOPE_TESTENV_APISERVER_PORT:-16443}
ISTIOD_HTTP_PORT=${MESHSCOPE_TESTENV_ISTIOD_HTTP_PORT:-8080}
ISTIOD_GRPC_PORT=${MESHSCOPE_TESTENV_ISTIOD_GRPC_PORT:-15010}
ISTIOD_SECURE_GRPC_PORT=${MESHSCOPE_TESTENV_ISTIOD_SECURE_GRPC_PORT:-15012}
ISTIOD_MONITORING_PORT=${MESHSCOPE_TESTENV_ISTIOD_MONITORING_PORT:-15014}
ISTIOD_WEBHOOK_PORT=${MESHSCOPE_TESTENV_ISTIOD_WEBHOOK_PORT:-15017}
ISTIOD_CTRLZ_PORT=${MESHSCOPE_TESTENV_ISTIOD_CTRLZ_PORT:-9876}

SERVICE_CIDR=10.96.0.0/16
KUBERNETES_SERVICE_IP=10.96.0.1
KIND_CLUSTER=${MESHSCOPE_KIND_CLUSTER:-meshscope}

# The wrapper modules under build/ are the only place versions are pinned.
export GOWORK=off GOFLAGS="${GOFLAGS:-} -mod=readonly" CGO_ENABLED=0

log() { printf 'testenv: %s\n' "$*" >&2; }
die() { printf 'testenv: error: %s\n' "$*" >&2; exit 1; }

# module_version DIR MODULE: the version DIR/go.mod requires MODULE at.
module_version() {
  awk -v m="$2" '($1 == "require" && $2 == m) { print $3 } ($1 == m && $2 ~ /^v/) { print $2 }' "$1/go.mod" | head -n1
}

# binary_path NAME DIR MODULE: where the cached binary for the pinned version lives. The key also
# hashes the wrapper's go.mod and go.sum and the Go version, so any change to them rebuilds.
binary_path() {
  local name=$1 dir=$2 module=$3 version key
  version=$(module_version "$dir" "$module")
  [[ -n $version ]] || die "$dir/go.mod does not require $module"
  key=$( { cat "$dir/go.mod" "$dir/go.sum"; go env GOVERSION; } | sha256sum | cut -c1-10)
  printf '%s/%s-%s-%s/%s\n' "$CACHE" "$name" "$version" "$key" "$name"
}

ETCD_DIR=$BUILD_DIR/etcd
APISERVER_DIR=$BUILD_DIR/apiserver
ISTIOD_DIR=$BUILD_DIR/istiod

TOFU_DIR=$BUILD_DIR/tofu
INJECTOR_DIR=$BUILD_DIR/injector

etcd_bin()      { binary_path etcd "$ETCD_DIR" go.etcd.io/etcd/server/v3; }
tofu_bin()      { binary_path tofu "$TOFU_DIR" github.com/opentofu/opentofu; }
apiserver_bin() { binary_path kube-apiserver "$APISERVER_DIR" k8s.io/kubernetes; }
istiod_bin()    { binary_path pilot-discovery "$ISTIOD_DIR" istio.io/istio; }
# endpointslices_bin: Kubernetes' EndpointSlice controller in the apiserver's wrapper module; its
# key also hashes the command's source.
endpointslices_bin() {
  local b
  b=$(binary_path endpointslices "$APISERVER_DIR" k8s.io/kubernetes)
  printf '%s-%s/endpointslices\n' "${b%/endpointslices}" "$(sha256sum <"$APISERVER_DIR/endpointslices/main.go" | cut -c1-6)"
}

# go_build NAME DIR PACKAGE OUT ESTIMATE LDFLAGS: build once; a cached binary is reused.
go_build() {
  local name=$1 dir=$2 pkg=$3 out=$4 estimate=$5 ldflags=$6 start
  if [[ -x $out ]]; then
    log "$name: cached at $out"
    return
  fi
  command -v go >/dev/null || die "go is not on PATH"
  mkdir -p "$(dirname "$out")"
  log "building $name ($estimate on a cold cache)..."
  start=$SECONDS
  (cd "$dir" && go build -trimpath -ldflags "$ldflags" -o "$out.tmp.$$" "$pkg") ||
    { rm -f "$out.tmp.$$"; die "building $name failed"; }
  mv -f "$out.tmp.$$" "$out"
  log "built $name in $((SECONDS - start))s: $out"
}

cmd_build() {
  local v rev
  if [[ ! -x $(etcd_bin) || ! -x $(apiserver_bin) || ! -x $(istiod_bin) || ! -x $(endpointslices_bin) ]]; then
    log "building from source into $CACHE: about 20 minutes on 2 cores and 7 GB of Go caches when cold"
  fi
  v=$(module_version "$ETCD_DIR" go.etcd.io/etcd/server/v3)
  go_build etcd "$ETCD_DIR" go.etcd.io/etcd/server/v3 "$(etcd_bin)" "about 3 minutes" \
    "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=${v}"

  v=$(module_version "$APISERVER_DIR" k8s.io/kubernetes)
  local major=${v#v}; major=${major%%.*}
  local minor=${v#v*.}; minor=${minor%%.*}
  local cb=k8s.io/component-base/version cg=k8s.io/client-go/pkg/version flags="-s -w"
  for p in $cb $cg; do
    flags+=" -X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    flags+=" -X $p.gitCommit=$v -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  go_build kube-apiserver "$APISERVER_DIR" k8s.io/kubernetes/cmd/kube-apiserver "$(apiserver_bin)" \
    "about 9 minutes" "$flags"

  # Kubernetes' EndpointSlice controller, which tests start for their own namespaces.
  go_build endpointslices "$APISERVER_DIR" ./endpointslices "$(endpointslices_bin)" "about 3 minutes" "-s -w"

  v=$(module_version "$ISTIOD_DIR" istio.io/istio)
  rev=${v##*-}
  local iv=istio.io/istio/pkg/version
  go_build pilot-discovery "$ISTIOD_DIR" istio.io/istio/pilot/cmd/pilot-discovery "$(istiod_bin)" \
    "about 10 minutes" \
    "-s -w -X $iv.buildVersion=$(istio_release)-dev -X $iv.buildGitRevision=$rev -X $iv.buildStatus=Clean -X $iv.buildTag=$v -X $iv.buildHub=localhost -X $iv.buildOS=$(go env GOOS) -X $iv.buildArch=$(go env GOARCH)"
}

# cmd_tofu: OpenTofu through its wrapper module (OpenTofu's go.mod replaces hcl/v2, which `go
# install` refuses), cached like the control plane's binaries.
cmd_tofu() {
  go_build tofu "$TOFU_DIR" github.com/opentofu/opentofu/cmd/tofu "$(tofu_bin)" "about 12 minutes" \
    "-s -w -X github.com/opentofu/opentofu/version.dev=no"
  echo "$(tofu_bin)"
}

# cmd_client NAME: a client of the tested matrix through its wrapper module build/NAME (tofu*:
# OpenTofu, terraform*: Terraform, whose wrapper pins the nested modules its module zip leaves
# out), cached like the control plane's binaries; prints its path. Both stamp a release version
# (version.dev=no), as their release builds do.
cmd_client() {
  local name=${1:-} dir module pkg bin out
  [[ -n $name ]] || die "usage: testenv.sh client NAME (a directory under $BUILD_DIR)"
  [[ $name == tofu ]] && { cmd_tofu; return; }
  dir=$BUILD_DIR/$name
  case $name in
  tofu-*) module=github.com/opentofu/opentofu pkg=github.com/opentofu/opentofu/cmd/tofu bin=tofu ;;
  terraform-*) module=github.com/hashicorp/terraform pkg=github.com/hashicorp/terraform bin=terraform ;;
  *) die "unknown client $name: want tofu, tofu-MAJOR.MINOR or terraform-MAJOR.MINOR" ;;
  esac
  [[ -f $dir/go.mod ]] || die "no wrapper module $dir/go.mod for client $name"
  out=$(binary_path "$name" "$dir" "$module")
  out=${out%/*}/$bin
  go_build "$name" "$dir" "$pkg" "$out" "about 5 minutes" "-s -w -X $module/version.dev=no"
  echo "$out"
}

# istio_module_dir: the istio module's source in the module cache (for the CRDs and VERSION).
istio_module_dir() {
  local v
  v=$(module_version "$ISTIOD_DIR" istio.io/istio)
  (cd "$ISTIOD_DIR" && go mod download -json "istio.io/istio@$v" | awk -F'"' '$2 == "Dir" { print $4 }')
}

istio_release() {
  local d
  d=$(istio_module_dir)
  if [[ -f $d/VERSION ]]; then tr -d '[:space:]' <"$d/VERSION"; else echo unknown; fi
}

# ---- processes -------------------------------------------------------------------------------

PKI=$STATE/pki
LOGS=$STATE/logs
KUBECONFIG_PATH=$STATE/kubeconfig
ENV_FILE=$STATE/env

# running NAME [BINARY]: the pid in NAME.pid is alive and runs the binary recorded in NAME.bin
# at start (a recycled pid never matches), and that binary is BINARY when one is given.
running() {
  local pid bin exe
  [[ -f $STATE/$1.pid && -f $STATE/$1.bin ]] || return 1
  pid=$(<"$STATE/$1.pid") bin=$(<"$STATE/$1.bin")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ -z ${2:-} || $2 == "$bin" ]] || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  [[ ${exe% (deleted)} == "$bin" ]]
}

# stop NAME: TERM, then KILL after 15 s, the one process recorded in NAME.pid.
stop() {
  local name=$1 pid i
  if running "$name"; then
    pid=$(<"$STATE/$name.pid")
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do
      running "$name" || break
      sleep 0.1
    done
    if running "$name"; then
      log "$name (pid $pid) did not stop in 15s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
    fi
  fi
  rm -f "$STATE/$name.pid" "$STATE/$name.bin"
}

# start NAME BINARY ARGS...: start in its own session, output to logs/NAME.log, pid to NAME.pid.
start() {
  local name=$1 bin=$2
  shift 2
  log "starting $name (log: $LOGS/$name.log)"
  setsid "$bin" "$@" </dev/null >>"$LOGS/$name.log" 2>&1 &
  echo $! >"$STATE/$name.pid"
  echo "$bin" >"$STATE/$name.bin"
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# port_holder PORT: the process listening on PORT, as ss names it (pid and program), when it can.
port_holder() {
  local line
  if command -v ss >/dev/null 2>&1; then
    line=$(ss -ltnpH "sport = :$1" 2>/dev/null | head -n1)
    if [[ $line =~ users:\(\(\"([^\"]*)\",pid=([0-9]+) ]]; then
      printf '%s (pid %s)' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
      return
    fi
    [[ -n $line ]] && { printf 'a listener (%s)' "$(awk '{print $4}' <<<"$line")"; return; }
  fi
  printf 'an unknown process'
}

# require_free_ports PORT...: fail on the first port something already listens on, naming it.
require_free_ports() {
  local p
  for p in "$@"; do
    port_free "$p" || die "127.0.0.1:$p is already in use by $(port_holder "$p"), which testenv did not start. Stop it, or move the test control plane with MESHSCOPE_TESTENV_*_PORT (see the top of $0)."
  done
}

# wait_for NAME SECONDS COMMAND...: poll COMMAND until it succeeds; fail early if NAME died.
wait_for() {
  local name=$1 timeout=$2 deadline
  shift 2
  deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ! running "$name"; then
      tail -n 30 "$LOGS/$name.log" >&2 || true
      die "$name exited during startup; see $LOGS/$name.log"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 30 "$LOGS/$name.log" >&2 || true
      die "$name was not ready after ${timeout}s; see $LOGS/$name.log"
    fi
    sleep 0.5
  done
}

gen_pki() {
  mkdir -p "$PKI"
  local o="-nodes" d=3650
  openssl req -x509 -newkey rsa:2048 $o -days $d -subj "/CN=meshscope-testenv-ca" \
    -keyout "$PKI/ca.key" -out "$PKI/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 $o -subj "/CN=kube-apiserver" \
    -keyout "$PKI/apiserver.key" -out "$PKI/apiserver.csr" 2>/dev/null
  printf '%s\n' \
    "subjectAltName=IP:127.0.0.1,IP:$KUBERNETES_SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" \
    "extendedKeyUsage=serverAuth" "keyUsage=digitalSignature,keyEncipherment" >"$PKI/apiserver.ext"
  openssl x509 -req -in "$PKI/apiserver.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days $d -extfile "$PKI/apiserver.ext" -out "$PKI/apiserver.crt" 2>/dev/null
  # The admin identity: system:masters, bound to cluster-admin by the apiserver's bootstrap policy.
  openssl req -newkey rsa:2048 $o -subj "/O=system:masters/CN=meshscope-testenv-admin" \
    -keyout "$PKI/admin.key" -out "$PKI/admin.csr" 2>/dev/null
  printf '%s\n' "extendedKeyUsage=clientAuth" "keyUsage=digitalSignature,keyEncipherment" >"$PKI/client.ext"
  openssl x509 -req -in "$PKI/admin.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days $d -extfile "$PKI/client.ext" -out "$PKI/admin.crt" 2>/dev/null
  # Service account token signing key.
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  rm -f "$PKI"/*.csr "$PKI"/*.ext "$PKI"/*.srl
  chmod 600 "$PKI"/*.key
}

write_kubeconfig() {
  local k=(kubectl --kubeconfig="$KUBECONFIG_PATH.tmp")
  rm -f "$KUBECONFIG_PATH.tmp"
  "${k[@]}" config set-cluster testenv --server="https://127.0.0.1:$APISERVER_PORT" \
    --certificate-authority="$PKI/ca.crt" --embed-certs=true >/dev/null
  "${k[@]}" config set-credentials testenv-admin --client-certificate="$PKI/admin.crt" \
    --client-key="$PKI/admin.key" --embed-certs=true >/dev/null
  "${k[@]}" config set-context testenv --cluster=testenv --user=testenv-admin >/dev/null
  "${k[@]}" config use-context testenv >/dev/null
  chmod 600 "$KUBECONFIG_PATH.tmp"
  mv -f "$KUBECONFIG_PATH.tmp" "$KUBECONFIG_PATH"
}

write_env() {
  cat >"$ENV_FILE.tmp" <<EOF
# Written by internal/testenv/testenv.sh; read by the Go helpers in internal/testenv.
KUBECONFIG=$KUBECONFIG_PATH
MESHSCOPE_TESTENV_KIND=$1
MESHSCOPE_TESTENV_CLUSTER_ID=$2
MESHSCOPE_TESTENV_XDS_ADDR=127.0.0.1:$ISTIOD_GRPC_PORT
MESHSCOPE_TESTENV_ISTIOD_HTTP_ADDR=127.0.0.1:$ISTIOD_HTTP_PORT
MESHSCOPE_TESTENV_ISTIOD_MONITORING_ADDR=127.0.0.1:$ISTIOD_MONITORING_PORT
MESHSCOPE_TESTENV_APISERVER=https://127.0.0.1:$APISERVER_PORT
MESHSCOPE_TESTENV_ISTIOD_BIN=${3:-}
MESHSCOPE_TESTENV_ISTIO_CRDS=${4:-}
MESHSCOPE_TESTENV_INJECTION_URL=${5:-}
MESHSCOPE_TESTENV_ENDPOINTSLICES_BIN=${6:-}
EOF
  mv -f "$ENV_FILE.tmp" "$ENV_FILE"
}

kc() { kubectl --kubeconfig="$KUBECONFIG_PATH" "$@"; }

apiserver_ready() {
  curl -sf --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    "https://127.0.0.1:$APISERVER_PORT/readyz" >/dev/null
}
etcd_ready() { curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }
istiod_ready() { curl -sf --max-time 2 "http://127.0.0.1:$ISTIOD_HTTP_PORT/ready" >/dev/null; }

# env_value KEY: KEY's value in the env file of the running testenv.
env_value() { [[ -f $ENV_FILE ]] && awk -F= -v k="$1" '$1 == k { print substr($0, length(k) + 2) }' "$ENV_FILE"; }

# istiod_ours: the istiod answering on the HTTP port serves the CLUSTER_ID this testenv gave it.
istiod_ours() {
  local id
  id=$(env_value MESHSCOPE_TESTENV_CLUSTER_ID)
  [[ -n $id ]] || return 1
  curl -sf --max-time 5 "http://127.0.0.1:$ISTIOD_HTTP_PORT/debug/clusterz" | grep -q "\"id\": *\"$id\""
}

# report NAME READY: log whether NAME runs and is ready; return non-zero when it is not.
report() {
  if running "$1" && "$2"; then
    log "$1: running (pid $(<"$STATE/$1.pid"))"
  else
    log "$1: down"
    return 1
  fi
}

cmd_status() {
  local ok=0
  report etcd etcd_ready || ok=1
  report kube-apiserver apiserver_ready || ok=1
  report istiod istiod_ready || ok=1
  if ((ok == 0)) && ! istiod_ours; then
    log "istiod: the istiod on 127.0.0.1:$ISTIOD_HTTP_PORT is not cluster $(env_value MESHSCOPE_TESTENV_CLUSTER_ID): a foreign control plane answers"
    ok=1
  fi
  return $ok
}

cmd_up() {
  cmd_build
  local ebin abin ibin
  ebin=$(etcd_bin) abin=$(apiserver_bin) ibin=$(istiod_bin)
  mkdir -p "$STATE"

  if running etcd "$ebin" && running kube-apiserver "$abin" && running istiod "$ibin" &&
    etcd_ready && apiserver_ready && istiod_ready && istiod_ours && [[ -f $KUBECONFIG_PATH && -f $ENV_FILE ]] &&
    [[ $(env_value MESHSCOPE_TESTENV_ENDPOINTSLICES_BIN) == "$(endpointslices_bin)" ]]; then
    log "already up"
    echo "$KUBECONFIG_PATH"
    return
  fi
  # Anything half up is stopped, and the cluster starts from empty: tests need a known state.
  stop istiod
  stop kube-apiserver
  stop etcd

  require_free_ports "$ETCD_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" "$ISTIOD_HTTP_PORT" "$ISTIOD_GRPC_PORT" \
    "$ISTIOD_SECURE_GRPC_PORT" "$ISTIOD_MONITORING_PORT" "$ISTIOD_WEBHOOK_PORT" "$ISTIOD_CTRLZ_PORT"

  local t0=$SECONDS
  rm -rf "$STATE/etcd-data" "$PKI" "$LOGS" "$STATE/istiod" "$KUBECONFIG_PATH" "$ENV_FILE"
  mkdir -p "$LOGS" "$STATE/istiod"
  gen_pki

  start etcd "$ebin" --name testenv --data-dir "$STATE/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "testenv=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync --log-level warn
  wait_for etcd 60 etcd_ready

  start kube-apiserver "$abin" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
    --secure-port="$APISERVER_PORT" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" --cert-dir="$PKI" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" --allow-privileged=true \
    --authorization-mode=RBAC --endpoint-reconciler-type=none \
    --disable-admission-plugins=ServiceAccount --enable-priority-and-fairness=false \
    --profiling=false
  wait_for kube-apiserver 120 apiserver_ready
  write_kubeconfig
  log "kube-apiserver ready after $((SECONDS - t0))s"

  local crds
  crds=$(istio_module_dir)/manifests/charts/base/files/crd-all.gen.yaml
  [[ -f $crds ]] || die "Istio CRDs not found at $crds"
  log "installing the Istio CRDs"
  kc apply --server-side --force-conflicts -f "$crds" >"$LOGS/crds.log"
  kc wait --for condition=established --timeout=60s -f "$crds" >>"$LOGS/crds.log"
  kc create namespace istio-system --dry-run=client -o yaml | kc apply --server-side -f - >>"$LOGS/crds.log"

  # istiod outside a cluster: every listener on loopback, the kubeconfig for the API, and no mesh
  # config file, so the mesh config comes from the `istio` ConfigMap in istio-system (defaults when
  # absent), as in a real install. The working directory holds the files istiod writes.
  local i0=$SECONDS cluster_id
  cluster_id=testenv-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
  # istiod serves sidecar injection with the templates istioctl renders for the default install,
  # read from its working directory; its webhook certificate also names localhost, so that a test's
  # MutatingWebhookConfiguration can point the API server at https://localhost:<webhook port>/inject.
  mkdir -p "$STATE/istiod/var/lib/istio/inject"
  (cd "$INJECTOR_DIR" && go run . "$STATE/istiod/var/lib/istio/inject") >"$LOGS/injector.log" 2>&1 ||
    die "rendering the injection templates failed; see $LOGS/injector.log"
  (
    cd "$STATE/istiod"
    export POD_NAMESPACE=istio-system POD_NAME=istiod-$cluster_id REVISION=default \
      CLUSTER_ID=$cluster_id ISTIOD_CUSTOM_HOST=istiod.istio-system.svc,localhost \
      PILOT_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER=false \
      PILOT_ENABLE_GATEWAY_API_STATUS=false \
      KUBECONFIG="$KUBECONFIG_PATH"
    start istiod "$ibin" discovery \
      --kubeconfig="$KUBECONFIG_PATH" --meshConfig="$STATE/istiod/no-mesh-file" \
      --networksConfig="$STATE/istiod/no-networks-file" \
      --httpAddr="127.0.0.1:$ISTIOD_HTTP_PORT" --httpsAddr="127.0.0.1:$ISTIOD_WEBHOOK_PORT" \
      --grpcAddr="127.0.0.1:$ISTIOD_GRPC_PORT" --secureGRPCAddr="127.0.0.1:$ISTIOD_SECURE_GRPC_PORT" \
      --monitoringAddr="127.0.0.1:$ISTIOD_MONITORING_PORT" \
      --ctrlz_address=127.0.0.1 --ctrlz_port="$ISTIOD_CTRLZ_PORT" \
      --domain=cluster.local --keepaliveMaxServerConnectionAge=30m --log_output_level=default:info
  )
  wait_for istiod 120 istiod_ready
  log "istiod ready after $((SECONDS - i0))s (everything up in $((SECONDS - t0))s)"

  write_env testenv "$cluster_id" "$ibin" "$crds" "https://localhost:$ISTIOD_WEBHOOK_PORT/inject" "$(endpointslices_bin)"
  istiod_ours || die "the istiod on 127.0.0.1:$ISTIOD_HTTP_PORT does not serve cluster $cluster_id; see $LOGS/istiod.log"
  echo "$KUBECONFIG_PATH"
}

cmd_down() {
  stop istiod
  stop kube-apiserver
  stop etcd
  kind_down_forward
  rm -f "$ENV_FILE"
  log "down (logs kept in $LOGS)"
}

cmd_env() {
  [[ -f $ENV_FILE ]] || die "not up: run 'make testenv' first"
  cat "$ENV_FILE"
}

# ---- kind (for machines with Docker; untested on the development machines) ------------------

kind_down_forward() {
  local pid
  if [[ -f $STATE/kind-port-forward.pid ]]; then
    pid=$(<"$STATE/kind-port-forward.pid")
    if [[ $pid =~ ^[0-9]+$ ]] && grep -qa port-forward "/proc/$pid/cmdline" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
    fi
    rm -f "$STATE/kind-port-forward.pid"
  fi
}

cmd_kind_up() {
  local t
  for t in docker kind istioctl kubectl; do
    command -v "$t" >/dev/null || die "kind-up needs $t on PATH"
  done
  docker info >/dev/null 2>&1 || die "kind-up needs a running Docker engine"
  mkdir -p "$STATE" "$LOGS"
  if ! kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
    log "creating kind cluster $KIND_CLUSTER (a few minutes)..."
    kind create cluster --name "$KIND_CLUSTER" --wait 120s
  fi
  kind get kubeconfig --name "$KIND_CLUSTER" >"$KUBECONFIG_PATH"
  chmod 600 "$KUBECONFIG_PATH"
  if ! kc -n istio-system get deploy istiod >/dev/null 2>&1; then
    log "installing Istio with istioctl (minimal profile)..."
    istioctl --kubeconfig "$KUBECONFIG_PATH" install -y --set profile=minimal
  fi
  kc -n istio-system rollout status deploy/istiod --timeout=300s
  kind_down_forward
  # The xDS probe and readiness checks expect istiod on loopback, as with `up`.
  setsid kubectl --kubeconfig="$KUBECONFIG_PATH" -n istio-system port-forward svc/istiod \
    "$ISTIOD_GRPC_PORT:15010" "$ISTIOD_HTTP_PORT:8080" </dev/null >>"$LOGS/kind-port-forward.log" 2>&1 &
  echo $! >"$STATE/kind-port-forward.pid"
  # istioctl's default CLUSTER_ID.
  write_env kind Kubernetes "" ""
  echo "$KUBECONFIG_PATH"
}

cmd_kind_down() {
  kind_down_forward
  command -v kind >/dev/null || die "kind is not on PATH"
  kind delete cluster --name "$KIND_CLUSTER"
  rm -f "$ENV_FILE"
}

case ${1:-} in
build) cmd_build ;;
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
env) cmd_env ;;
tofu) cmd_tofu ;;
client) cmd_client "${2:-}" ;;
kind-up) cmd_kind_up ;;
kind-down) cmd_kind_down ;;
*)
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
