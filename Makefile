# reaper — see README.md. Targets: run, stop, test, build, generate, lint, bench, faults, clean, run-clever, cluster, run-docker, cluster-docker, pebble, caddy, kube, image.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
export GORACE ?= atexit_sleep_ms=0

.PHONY: run stop test build generate lint bench faults clean

build:
	@mkdir -p bin
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/reaper ./cmd/demoapp ./cmd/fakeclever

run: build
	@echo
	@echo "reaper demo: two apps behind the gateway, asleep until someone asks."
	@echo "  browser:  http://hello.localhost:8080/   (holds API calls; browsers get the waiting page)"
	@echo "            http://api.localhost:8080/     (answers API calls 503 at once while it wakes)"
	@echo "  curl:     curl -i -H 'Host: hello.localhost' http://127.0.0.1:8080/        # held, then the app's answer"
	@echo "            curl -i -H 'Host: api.localhost' http://127.0.0.1:8080/          # 503 + Retry-After, app starting"
	@echo "            curl -i -H 'Host: hello.localhost' -H 'CleverCloud-Reaper: status' http://127.0.0.1:8080/"
	@echo "            curl -i -H 'Host: hello.localhost' -A 'UptimeRobot/2.0' http://127.0.0.1:8080/   # monitor: 200, no wake"
	@echo "  health:   curl http://127.0.0.1:9090/healthz"
	@if [ -n "$$REAPER_ADMIN_TOKEN" ]; then t='your $$REAPER_ADMIN_TOKEN'; else t=demo-admin-token; fi; \
	  echo "  dashboard: http://127.0.0.1:9090/   (sign in with $$t)"
	@echo "  The apps sleep after 30 s without traffic; watch this log. Ctrl-C stops reaper (the apps keep running: make stop stops them)."
	@echo
	./bin/reaper serve --config examples/demo.yaml

# test: every package; those that run a Kubernetes control plane last, once a
# build of it under way (make kube, which .ci/run starts in the background
# first) is done. Without its binaries they skip (REAPER_REQUIRE_KUBE=1: fail).
KUBE_PKGS := ./internal/kubetest ./paas/kubernetes ./e2e/kube
.PHONY: test-nokube test-kube
test: test-nokube test-kube
test-nokube:
	$(GO) test -race -timeout 20m $$($(GO) list ./... | grep -v -x -e '.*/internal/kubetest' -e '.*/paas/kubernetes' -e '.*/e2e/kube')
test-kube:
	@REAPER_KUBE_VERSION=$(KUBE_VERSION) REAPER_KUBE_BINS=$(KUBE_BINS) ./scripts/kube-bins.sh --wait
	$(GO) test -race -timeout 20m $(KUBE_PKGS)

generate:
	$(GO) tool templ generate

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

bench: build
	$(GO) run ./bench

# faults: randomized, seeded schedules of faults against a three-node cluster
# (docs/reliability.md). FAULTS_FLAGS passes flags: make faults FAULTS_FLAGS='-seed 1234 -n 1'
faults: build
	$(GO) run ./faults $(FAULTS_FLAGS)

# stop: stop the demo's apps that reaper left running (they outlive it on purpose),
# and only those (reaper stop-apps; refused while the demo's reaper runs).
stop: build
	./bin/reaper stop-apps --config examples/demo.yaml

# clean: stop the demo's apps first: deleting their pid files under them would
# leave them holding their ports.
clean: stop
	rm -rf bin data build

.PHONY: image
# image: reaper's container image (Dockerfile: FROM scratch, the static binary, CA
# certificates, user 65532), built from local files by scripts/image.sh, the one
# way it is built (make cluster-docker and the tests use it too). IMAGE names it.
IMAGE ?= reaper:$(VERSION)
image:
	VERSION=$(VERSION) ./scripts/image.sh $(IMAGE)
	@docker image ls $(IMAGE)

.PHONY: pebble
# pebble: Let's Encrypt's ACME test server, which the automatic HTTPS tests run
# (internal/pebbletest; they skip without it unless REAPER_REQUIRE_PEBBLE=1).
# Installed into $(go env GOPATH)/bin, from the Go module proxy.
PEBBLE_VERSION := v2.10.3
pebble:
	$(GO) install github.com/letsencrypt/pebble/v2/cmd/pebble@$(PEBBLE_VERSION)

.PHONY: caddy
# caddy: the Caddy the forward-auth tests run in front of reaper
# (e2e/forwardauth_proxies_test.go; they skip without it unless
# REAPER_REQUIRE_CADDY=1), built from the Go module proxy into the user's cache
# folder, where the tests look. Building it takes minutes.
CADDY_VERSION := v2.11.9
CADDY_DIR := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/reaper/caddy-$(CADDY_VERSION)
caddy:
	@test -x $(CADDY_DIR)/caddy || GOBIN=$(CADDY_DIR) $(GO) install github.com/caddyserver/caddy/v2/cmd/caddy@$(CADDY_VERSION)

.PHONY: kube
# kube: kube-apiserver, etcd and kube-controller-manager, which the Kubernetes
# driver's tests run (internal/kubetest; they skip without them unless
# REAPER_REQUIRE_KUBE=1), built from the Go module proxy into
# $(KUBE_BINS) by scripts/kube-bins.sh, only those missing. Cold, the build
# takes about 1000 CPU-seconds; then it is cached.
KUBE_VERSION := v1.37.2
KUBE_BINS := $(or $(REAPER_KUBE_BINS),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/reaper/kubernetes/$(KUBE_VERSION))
kube:
	REAPER_KUBE_VERSION=$(KUBE_VERSION) REAPER_KUBE_BINS=$(KUBE_BINS) ./scripts/kube-bins.sh

.PHONY: run-clever
# run-clever: the gateway with the Clever Cloud driver against the fake Clever Cloud
# (cmd/fakeclever, on its fixed loopback ports 7801-7804 and 7810-7811), so the
# Clever path can be tried without an account. The fake stops when reaper does.
run-clever: build
	@mkdir -p data
	@./bin/fakeclever --apps 2 --state SHOULD_BE_DOWN --app-edge-base 7810 \
	    --boot-time 5s --deploy-delay 2s --stop-linger 3s >data/fakeclever.log 2>&1 & fake=$$!; \
	trap 'kill $$fake 2>/dev/null; wait $$fake 2>/dev/null; echo "fakeclever stopped"' EXIT; \
	for i in $$(seq 50); do \
	    if ! kill -0 $$fake 2>/dev/null; then echo "fakeclever did not start:"; cat data/fakeclever.log; exit 1; fi; \
	    (exec 3<>/dev/tcp/127.0.0.1/7804) 2>/dev/null && break; sleep 0.1; \
	done; \
	echo; \
	echo "reaper + a fake Clever Cloud: two apps, stopped until someone asks (boot: 2 s + 5 s)."; \
	echo "  fake: bridge http://127.0.0.1:7801, control http://127.0.0.1:7804/_fake/ (log: data/fakeclever.log)"; \
	echo "  curl -i -H 'Host: hello.localhost' http://127.0.0.1:8080/        # held, then the app's answer"; \
	echo "  curl -i -H 'Host: api.localhost' http://127.0.0.1:8080/          # 503 + Retry-After, app starting"; \
	echo "  curl -i -H 'Host: hello.localhost' -H 'CleverCloud-Reaper: status' http://127.0.0.1:8080/"; \
	echo "  curl -s http://127.0.0.1:7804/_fake/apps                         # the apps as Clever Cloud sees them"; \
	echo "  curl -X POST http://127.0.0.1:7804/_fake/apps/app_00000000-0000-4000-8000-000000000001/console/stop   # stop from the console"; \
	echo "  curl -s -H 'Authorization: Bearer demo-admin-token' http://127.0.0.1:9090/api/apps"; \
	echo "  The apps sleep after 30 s without traffic; watch this log. Ctrl-C stops reaper and the fake."; \
	echo; \
	./bin/reaper serve --config examples/clevercloud-fake.yaml

.PHONY: cluster
# cluster: three local nodes (Raft over loopback), a local redis-server as the
# shared store, and the fake Clever Cloud as the platform. Ctrl-C stops them all.
cluster: build
	./scripts/cluster.sh

.PHONY: run-docker
# run-docker: the demo with the docker driver. The Makefile (not reaper: it never
# creates containers) builds an image of the demo app FROM scratch, from local
# files, and creates two stopped containers of it; reaper serves them with
# examples/docker.yaml. Ctrl-C stops reaper; the containers stay (docker rm -f
# reaper-demo-hello reaper-demo-api removes them).
DEMO_IMAGE := reaper-demoapp:demo
run-docker: build
	@mkdir -p data/docker-image
	@CGO_ENABLED=0 $(GO) build -trimpath -o data/docker-image/demoapp ./cmd/demoapp
	@printf 'FROM scratch\nCOPY demoapp /demoapp\nENTRYPOINT ["/demoapp"]\n' >data/docker-image/Dockerfile
	@docker build -q -t $(DEMO_IMAGE) data/docker-image >/dev/null
	@docker rm -f reaper-demo-hello reaper-demo-api >/dev/null 2>&1 || true
	@docker create --name reaper-demo-hello -p 127.0.0.1:3101:8080 $(DEMO_IMAGE) \
	    --listen :8080 --name hello --boot-delay 1s >/dev/null
	@docker create --name reaper-demo-api -p 127.0.0.1:3102:8080 \
	    --label reaper.enable=true --label reaper.app_id=api --label reaper.stop_method=pause \
	    --label reaper.ready.http=http://127.0.0.1:3102/healthz \
	    $(DEMO_IMAGE) --listen :8080 --name api --boot-delay 1s >/dev/null
	@echo
	@echo "reaper demo with Docker: two containers behind the gateway, stopped until someone asks."
	@echo "  browser:  http://hello.localhost:8080/   (holds API calls; browsers get the waiting page)"
	@echo "            http://api.localhost:8080/     (discovered from its labels; answers API calls 503 at once)"
	@echo "  curl:     curl -i -H 'Host: hello.localhost' http://127.0.0.1:8080/        # held, then the app's answer"
	@echo "            curl -i -H 'Host: api.localhost' http://127.0.0.1:8080/          # 503 + Retry-After, container starting"
	@echo "            curl -i -H 'Host: hello.localhost' -H 'CleverCloud-Reaper: status' http://127.0.0.1:8080/"
	@echo "            curl -i -H 'Host: hello.localhost' -A 'UptimeRobot/2.0' http://127.0.0.1:8080/   # monitor: 200, no wake"
	@echo "  docker:   docker ps -a --filter name=reaper-demo    # hello is stopped when asleep, api paused"
	@echo "  health:   curl http://127.0.0.1:9090/healthz"
	@echo "  The apps sleep after 30 s without traffic; watch this log. Ctrl-C stops reaper (the containers stay)."
	@echo
	./bin/reaper serve --config examples/docker.yaml

.PHONY: cluster-docker
# cluster-docker: three reaper nodes as containers, redis-server and two demo apps
# as containers on a private network, every image built here from local files
# (docs/docker.md). Try a partition with docker network disconnect; Ctrl-C removes
# it all. The test of the same setup: go test ./e2e -run DockerCluster.
cluster-docker:
	./scripts/cluster-docker.sh
