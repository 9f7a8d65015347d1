#!/usr/bin/env bash
# scripts/image.sh TAG [CONTEXT_DIR]: builds reaper's container image TAG from the
# Dockerfile at the root of the repository and local files only (no registry):
# bin reaper built static (CGO_ENABLED=0, -trimpath, -s -w, main.version from
# $VERSION or git describe), the machine's CA certificates ($REAPER_CA_BUNDLE,
# else /etc/ssl/certs/ca-certificates.crt), a passwd and a group file naming the
# user reaper (65532), and the empty /data it owns. The build context goes to
# CONTEXT_DIR (default build/image), emptied first. make image, make
# cluster-docker and the tests (internal/dockertest) all build the image here.
set -euo pipefail
cd "$(dirname "$0")/.."

tag=${1:?usage: scripts/image.sh TAG [CONTEXT_DIR]}
ctx=${2:-build/image}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
ca=${REAPER_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ -s "$ca" ] || { echo "scripts/image.sh: no CA certificates at $ca: install ca-certificates, or set REAPER_CA_BUNDLE" >&2; exit 1; }

rm -rf "$ctx"
mkdir -p "$ctx/data"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$ctx/reaper" ./cmd/reaper
cp -L "$ca" "$ctx/ca-certificates.crt"
printf 'root:x:0:0:root:/:/sbin/nologin\nreaper:x:65532:65532:reaper:/data:/sbin/nologin\n' >"$ctx/passwd"
printf 'root:x:0:\nreaper:x:65532:\n' >"$ctx/group"
chmod 0644 "$ctx/passwd" "$ctx/group" "$ctx/ca-certificates.crt"
cp Dockerfile "$ctx/Dockerfile"
docker build -q -t "$tag" "$ctx" >/dev/null
echo "$tag"
