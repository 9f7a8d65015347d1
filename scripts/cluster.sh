#!/usr/bin/env bash
# make cluster: a local three-node reaper cluster on one machine, with a local
# redis-server (Valkey protocol) and the fake Clever Cloud as the platform.
# Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v redis-server >/dev/null || { echo "redis-server is needed: apt-get install redis-server" >&2; exit 1; }
mkdir -p data/cluster
pids=()
cleanup() {
  trap - INT TERM EXIT
  echo; echo "stopping the cluster..."
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

redis-server --port 7900 --bind 127.0.0.1 --save "" --appendonly yes --dir "$PWD/data/cluster" \
  --daemonize no >data/cluster/redis.log 2>&1 &
pids+=($!)
for _ in $(seq 50); do
  redis-cli -p 7900 ping >/dev/null 2>&1 && break
  sleep 0.1
done
./bin/fakeclever --apps 2 --state SHOULD_BE_DOWN --app-edge-base 7810 --boot-time 3s --deploy-delay 1s --stop-linger 1s \
  --token "${CLEVER_CLOUD_API_TOKEN:-fake-token}" >data/cluster/fakeclever.log 2>&1 &
pids+=($!)
for i in 1 2 3; do
  ./bin/reaper serve --config "examples/cluster/n$i.yaml" >"data/cluster/n$i.log" 2>&1 &
  pids+=($!)
done

for _ in $(seq 100); do
  ./bin/reaper cluster status --config examples/cluster/n1.yaml 2>/dev/null | grep -q ', leader n' && break
  sleep 0.2
done
./bin/reaper cluster status --config examples/cluster/n1.yaml || true
cat <<'TXT'

Three gateways (n1 :8181, n2 :8182, n3 :8183) share two apps of the fake Clever Cloud.
Logs: data/cluster/n1.log … n3.log, redis.log, fakeclever.log.

  curl -i -H 'Host: app1.localhost' http://127.0.0.1:8182/    # held on n2 until the leader has woken the app
  curl -i -H 'Host: app2.localhost' http://127.0.0.1:8183/    # 503 at once; the app starts
  ./bin/reaper cluster status --config examples/cluster/n2.yaml
  dashboards: http://127.0.0.1:9191/ (n1), :9192/ (n2), :9193/ (n3); sign in with
              cluster-admin-token (or your REAPER_ADMIN_TOKEN); each shows the whole cluster
  kill the leader's process (see the status), then ask again through another node.

The apps start asleep, and sleep again after 30 s without traffic. Ctrl-C stops the whole cluster.
TXT
wait
