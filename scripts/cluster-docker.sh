#!/usr/bin/env bash
# make cluster-docker: a three-node reaper cluster where every node is a container,
# with a redis-server container as the shared store and two demo apps as
# containers, all on a private network (--internal: no way out). Every image is
# built here FROM scratch from local files (no registry): reaper's own image by
# scripts/image.sh (make image), the demo app built static, the machine's own
# redis-server and its libraries.
# Each node's gateway and admin API are published on loopback (8081-8083,
# 9091-9093). Ctrl-C removes everything it created.
#
# The nodes reach the engine through its socket, mounted into them (reaper runs as
# user 65532 in its image: it gets the socket's group). That is root on the host:
# in production put the allow-list proxy of docs/docker.md between.
set -euo pipefail
cd "$(dirname "$0")/.."

P=reaper-cluster
command -v redis-server >/dev/null || { echo "redis-server is needed (its binary goes into an image): apt-get install redis-server" >&2; exit 1; }
docker version >/dev/null || { echo "no Docker engine answers" >&2; exit 1; }

cleanup() {
  trap - INT TERM EXIT
  echo; echo "removing the cluster's containers, networks and images..."
  docker rm -f -v $P-n1 $P-n2 $P-n3 $P-redis $P-hello $P-api >/dev/null 2>&1 || true
  docker network rm $P-private $P-access >/dev/null 2>&1 || true
  docker rmi $P-reaper:demo $P-demoapp:demo $P-redis:demo >/dev/null 2>&1 || true
}
trap cleanup INT TERM EXIT
cleanup; trap cleanup INT TERM EXIT

ctx=data/cluster-docker
rm -rf "$ctx"; mkdir -p "$ctx"/{demoapp,redis,conf}
./scripts/image.sh $P-reaper:demo "$ctx/reaper" >/dev/null
CGO_ENABLED=0 go build -trimpath -o "$ctx/demoapp/demoapp" ./cmd/demoapp
printf 'FROM scratch\nCOPY demoapp /demoapp\nENTRYPOINT ["/demoapp"]\n' >"$ctx/demoapp/Dockerfile"
docker build -q -t $P-demoapp:demo "$ctx/demoapp" >/dev/null
# redis-server: the binary under its own name (it picks its mode from argv[0]) and
# every library ldd lists, at their paths.
bin=$(command -v redis-server)
{ echo "FROM scratch"; i=0
  for f in "$bin" $(ldd "$bin" | awk '$2=="=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
    cp -L "$f" "$ctx/redis/f$i"; chmod 755 "$ctx/redis/f$i"; echo "COPY f$i $f"; i=$((i+1))
  done
  echo "ENTRYPOINT [\"$bin\"]"; } >"$ctx/redis/Dockerfile"
docker build -q -t $P-redis:demo "$ctx/redis" >/dev/null

docker network create --internal $P-private >/dev/null
docker network create $P-access >/dev/null
docker run -d --name $P-redis --network $P-private --network-alias redis $P-redis:demo \
  --port 6379 --protected-mode no --save "" --appendonly no >/dev/null
for app in hello api; do
  docker create --name $P-$app --network $P-private --network-alias $app $P-demoapp:demo \
    --listen :8080 --name $app --boot-delay 1s >/dev/null
done

secret=$(head -c 18 /dev/urandom | base64)
sock_group=$(stat -c %g /var/run/docker.sock)
for i in 1 2 3; do
  cat >"$ctx/conf/n$i.yaml" <<YAML
node: {id: n$i, listen: "0.0.0.0:8080", admin_listen: "0.0.0.0:9090", admin_token: demo-admin-token, data_dir: /data}
reaper: {job_interval: 5s, fast_interval: 500ms}
store: {driver: valkey, address: "redis:6379"}
cluster:
  raft_listen: "0.0.0.0:7000"
  secret: "$secret"
  peers:
    - {id: n1, raft_addr: "n1:7000", api_addr: "n1:9090"}
    - {id: n2, raft_addr: "n2:7000", api_addr: "n2:9090"}
    - {id: n3, raft_addr: "n3:7000", api_addr: "n3:9090"}
paas:
  driver: docker
  docker:
    labels: false
    apps:
      - {id: hello, container: $P-hello, ready: {tcp: "hello:8080"}}
      - {id: api, container: $P-api, stop_method: pause, ready: {tcp: "api:8080"}}
routes:
  - id: hello
    frontend: {domains: [hello.localhost]}
    backend: {targets: ["http://hello:8080"]}
    plugins: [{plugin: reaper, config: {app_id: hello, grace_period: 30s, fail_timeout: 30s}}]
  - id: api
    frontend: {domains: [api.localhost]}
    backend: {targets: ["http://api:8080"]}
    plugins: [{plugin: reaper, config: {app_id: api, grace_period: 30s, fail_timeout: 30s, api_behavior: unavailable}}]
YAML
  docker create --name $P-n$i --network $P-access -p 127.0.0.1:808$i:8080 -p 127.0.0.1:909$i:9090 \
    -v "$PWD/$ctx/conf/n$i.yaml:/etc/reaper/reaper.yaml:ro" \
    -v /var/run/docker.sock:/var/run/docker.sock --group-add "$sock_group" \
    $P-reaper:demo >/dev/null
  docker network connect --alias n$i $P-private $P-n$i
done
docker start $P-n1 $P-n2 $P-n3 >/dev/null

cat <<TXT

reaper cluster in containers: nodes n1-n3 (gateways 127.0.0.1:8081-8083, admin 9091-9093),
redis and two apps (hello: stopped when asleep, api: paused) on the private network $P-private.
  curl -i -H 'Host: hello.localhost' http://127.0.0.1:8081/        # held, then the app's answer
  curl -i -H 'Host: api.localhost' http://127.0.0.1:8082/          # 503 at once; the app starts
  curl -s -H 'Authorization: Bearer demo-admin-token' http://127.0.0.1:9091/api/cluster
  docker network disconnect $P-private $P-n1     # a partition: n1 is cut off (it keeps the engine's socket)
  docker network connect --alias n1 $P-private $P-n1   # and it rejoins
  docker logs -f $P-n2                                 # a node's log
  docker ps -a --filter name=$P                      # each node's health too (reaper health)
The apps sleep after 30 s without traffic. Ctrl-C removes the cluster.
TXT
docker logs -f $P-n1 2>&1 | grep --line-buffered -v '"level":"DEBUG"' || true
