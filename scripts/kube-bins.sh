#!/usr/bin/env bash
# kube-bins.sh: build kube-apiserver, etcd and kube-controller-manager from the Go
# module proxy, for the Kubernetes driver's tests (internal/kubetest), into
# ${REAPER_KUBE_BINS:-${XDG_CACHE_HOME:-$HOME/.cache}/reaper/kubernetes/v1.37.2}. A binary already
# there is kept: a second run costs nothing. No container image, registry or
# download bucket is used.
#
# The recipe: a throwaway wrapper module requires k8s.io/kubernetes at the pinned
# version and replaces each staging module it requires at v0.0.0 (k8s.io/api,
# k8s.io/client-go, ...) by its v0.<minor>.<patch> tag, with the checksums pinned in
# scripts/kube/wrap-<version>.go.sum. etcd is built in the same module, so its
# version is the one Kubernetes pins (v3.7.0 for v1.37.2); its own go.mod has
# replace directives, so `go install` of it cannot work.
#
# Cold, the build takes ~1000 CPU-seconds (9 min on two idle cores), a 2.4 GB
# peak RSS, and ~3.5 GB of build cache; warm, seconds.
#
# A build holds a lock ($OUT/.lock) until it is done, so that two runs never
# build at once, and so that `--wait` (make test's, before the Kubernetes
# packages) waits for a build under way — .ci/run starts one in the background
# before everything else — and never builds anything itself.
# Usage: scripts/kube-bins.sh [--wait | targets...]   (default: kube-apiserver etcd kube-controller-manager)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
KV=${REAPER_KUBE_VERSION:-v1.37.2}
OUT=${REAPER_KUBE_BINS:-${XDG_CACHE_HOME:-$HOME/.cache}/reaper/kubernetes/$KV}
mkdir -p "$OUT"
exec 9>"$OUT/.lock"
if [ "${1:-}" = --wait ]; then
  flock 9 # a build under way ends first
  exit 0
fi
flock 9
TARGETS=${*:-kube-apiserver etcd kube-controller-manager}

missing=()
for t in $TARGETS; do [ -x "$OUT/$t" ] || missing+=("$t"); done
if [ ${#missing[@]} -eq 0 ]; then
  echo "kube-bins: $TARGETS already in $OUT"
  exit 0
fi

mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=$OUT/.wrap
mkdir -p "$W"; cd "$W"

# The wrapper module: one replace per staging module k8s.io/kubernetes requires
# at v0.0.0. k8s.io/sample-cli-plugin and k8s.io/sample-controller are only
# replaced, not required, and the proxy refuses them (403): they are left out.
SV="v0.${KV#v1.}"   # v1.37.2 -> v0.37.2
GOMOD=$(go mod download -json "k8s.io/kubernetes@$KV" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
{
  echo "module reaperkubebins"
  echo
  grep -m1 '^go ' "$GOMOD"
  echo
  echo "require k8s.io/kubernetes $KV"
  echo
  echo "replace ("
  awk '/^require \(/{r=1;next} r&&/^\)/{r=0} r&&$1~/^k8s.io\//&&$2=="v0.0.0"{print "\t" $1 " => " $1 " '"$SV"'"}' "$GOMOD"
  echo ")"
} > go.mod
[ -f "$HERE/kube/wrap-$KV.go.sum" ] && cp "$HERE/kube/wrap-$KV.go.sum" go.sum

# Without the -X flags, --version and /version say v0.0.0-master.
MIN=${KV#v1.}; MIN=${MIN%%.*}
LDV="-s -w -X k8s.io/component-base/version.gitVersion=$KV -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$MIN -X k8s.io/component-base/version.gitTreeState=clean"
for t in "${missing[@]}"; do
  case $t in
    etcd) pkg=go.etcd.io/etcd/server/v3; ld="-s -w" ;;
    *) pkg=k8s.io/kubernetes/cmd/$t; ld="$LDV" ;;
  esac
  s=$(date +%s)
  # Into a temporary name, then renamed: a build cut short leaves no binary
  # that the next run would take as done.
  go build -mod=mod -trimpath -ldflags="$ld" -o "$OUT/.$t.tmp" "$pkg"
  mv "$OUT/.$t.tmp" "$OUT/$t"
  echo "kube-bins: built $t in $(( $(date +%s) - s ))s, $(du -m "$OUT/$t" | cut -f1) MiB"
done
