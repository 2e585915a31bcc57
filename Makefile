# imagectl — see README.md.
SHELL := /bin/bash
GO ?= go
BIN ?= bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# -s -w strip the symbol table and DWARF, as ko's and kind's release builds
# do (with -trimpath): the binaries are copied into the sidecar and
# downloaded; build_test.go checks the build recipe keeps them. The version
# is options/base's, which imagectl and imagectl-probe both link.
LDFLAGS := -s -w -X github.com/imagectl/imagectl/cmd/imagectl/app/options/base.Version=$(VERSION)
# An empty IMAGECTL_TEST_CACHE counts as unset (as in the scripts' ${VAR:-default}):
# ?= would keep it empty and make $(IMAGECTL_TEST_CACHE)/bin /bin.
export IMAGECTL_TEST_CACHE := $(or $(IMAGECTL_TEST_CACHE),$(HOME)/.cache/imagectl-test)

.PHONY: build deps test unit kube race fuzz e2e bench lint ci

# imagectl-probe is smoke attach alone, the small binary copied into the
# code-server sidecar (arch_test.go holds it under 15 MB unstripped).
# imagectl-sbom is the SBOM scanner, the one binary that links syft: the
# nested module cmd/imagectl-sbom (its own go.mod), which imagectl runs from
# beside itself (sbom.Find).
SCANNER_MODULE := cmd/imagectl-sbom

build: ## Build bin/imagectl, bin/imagectl-sbom (the SBOM scanner) and bin/imagectl-probe (static, so they can be copied into the code-server sidecar; stripped, -s -w -trimpath)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/imagectl ./cmd/imagectl
	CGO_ENABLED=0 $(GO) -C $(SCANNER_MODULE) build -trimpath -ldflags '-s -w' -o $(abspath $(BIN))/imagectl-sbom .
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/imagectl-probe ./cmd/imagectl-probe

deps: ## Install what the tests need (idempotent; cached under $IMAGECTL_TEST_CACHE)
	bash hack/timed.sh deps bash hack/install-deps.sh

unit: ## Go tests only, with whatever tools are already installed
	$(GO) test ./...
	$(GO) -C $(SCANNER_MODULE) test ./...

# KUBE_KUBERAY are the KubeRay operator versions tests/kube runs against, one
# build module each (tests/kube/build/kuberay-vX.Y.Z): a real control plane
# (tests/e2e/with-kube.sh) per version.
KUBE_KUBERAY := $(patsubst tests/kube/build/kuberay-%,%,$(wildcard tests/kube/build/kuberay-v*))

test: deps ## The test command: install what is needed, run every Go test with the real tools required (tests/kube apart: it needs a control plane), the race detector over the concurrent code, the fuzzers briefly, the end-to-end test, then tests/kube against a real control plane and, with the image the end-to-end test built, on a real node
	@set -e; d=$$(mktemp -d); \
	  setsid nice -n 10 bash hack/timed.sh "kube binaries (background)" bash hack/deps.d/kube.sh >"$$d/kube-build.log" 2>&1 </dev/null & kb=$$!; \
	  trap 'kill -- -'$$kb' 2>/dev/null || true; rm -rf "$$d"' EXIT; trap 'exit 130' INT; trap 'exit 143' TERM HUP; \
	  echo "tests/kube's binaries: hack/deps.d/kube.sh runs in the background at nice 10 until make kube needs them"; \
	  bash hack/timed.sh "imagectl-sbom build" $(GO) -C $(SCANNER_MODULE) build -o "$$d/imagectl-sbom" .; export IMAGECTL_SBOM_SCANNER="$$d/imagectl-sbom"; \
	  bash hack/timed.sh "go test" bash tests/e2e/with-buildkitd.sh env IMAGECTL_REQUIRE_TOOLS=1 $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v '/tests/kube$$'); \
	  bash hack/timed.sh "go test (imagectl-sbom)" env IMAGECTL_REQUIRE_TOOLS=1 $(GO) -C $(SCANNER_MODULE) test -count=1 -timeout $(TEST_TIMEOUT) ./...; \
	  bash hack/timed.sh race $(MAKE) race; \
	  bash hack/timed.sh fuzz $(MAKE) fuzz; \
	  IMAGECTL_E2E_IMAGE_OUT=$$d/sidecar.oci.tar bash hack/timed.sh e2e bash tests/e2e/run.sh; \
	  wait $$kb || echo "hack/deps.d/kube.sh failed in the background; with-kube.sh builds again"; trap 'rm -rf "$$d"' EXIT; cat "$$d/kube-build.log"; \
	  bash hack/timed.sh kube $(MAKE) kube KUBE_SIDECAR=$$d/sidecar.oci.tar

# TEST_TIMEOUT bounds one test package (go test's default, 10m, is less
# than smoke/image's real containers take on a loaded 2-core machine, where
# arm64 runs under QEMU).
TEST_TIMEOUT ?= 45m

# RACE_PACKAGES run their goroutines (the scanner processes and the
# loopback registry serving them, the base prefetch, concurrent signing and
# validation, the extension cache's shared state) under the race detector
# in make test. The scanner itself (cmd/imagectl-sbom) scans one image per
# process.
RACE_PACKAGES := ./sbom ./extensions ./extensions/cache ./sign ./build ./build/pipeline

# KUBE_SIDECAR is the OCI archive of an image the e2e built (make test
# passes its own): with it, make kube also runs tests/kube's *OnNode tests
# on a node (kubelet, containerd, CoreDNS, kube-proxy; as root), the head Pod
# running that image as its sidecar and the Ray stand-in
# (tests/kube/standin) built on it, and then tests/e2e/kube-teardown.sh (a
# node run beside another program's netns, runc containers and files, and
# one with a deliberate leak, which must be caught).
KUBE_SIDECAR ?=

kube: ## tests/kube against a real etcd, kube-apiserver, kube-controller-manager and KubeRay operator, once per KUBE_KUBERAY version; with KUBE_SIDECAR=<OCI archive> also on a real node (kubelet, containerd, CoreDNS, kube-proxy), then the node teardown's own check (tests/e2e/kube-teardown.sh)
	@set -e; for v in $(KUBE_KUBERAY); do \
	  echo "tests/kube with the KubeRay operator $$v"; \
	  IMAGECTL_KUBE_KUBERAY=$$v bash hack/timed.sh "kube $$v" bash tests/e2e/with-kube.sh env IMAGECTL_REQUIRE_TOOLS=1 $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -parallel 8 -skip OnNode ./tests/kube; \
	  if [ -z "$(KUBE_SIDECAR)" ]; then \
	    echo "tests/kube on a node with the KubeRay operator $$v: NOT RUN (KUBE_SIDECAR, the OCI archive of an image the e2e built, is not set; make test sets it)"; \
	    continue; \
	  fi; \
	  echo "tests/kube on a node with the KubeRay operator $$v"; \
	  IMAGECTL_KUBE_NODE=1 IMAGECTL_KUBE_SIDECAR="$(KUBE_SIDECAR)" IMAGECTL_KUBE_KUBERAY=$$v bash hack/timed.sh "kube $$v on a node" bash tests/e2e/with-kube.sh \
	    env IMAGECTL_REQUIRE_TOOLS=1 IMAGECTL_KUBE_REQUIRE_NODE=1 $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v -run OnNode ./tests/kube; \
	done; \
	if [ -n "$(KUBE_SIDECAR)" ]; then \
	  echo "the node's teardown check, beside a neighbour and against a deliberate leak"; \
	  IMAGECTL_KUBE_SIDECAR="$(KUBE_SIDECAR)" bash hack/timed.sh "kube teardown check" bash tests/e2e/kube-teardown.sh; \
	fi

race: ## The packages that run concurrent code, under the race detector
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -race $(RACE_PACKAGES)

# Each fuzz target runs a fixed number of inputs (target:count below, about
# 10 s each on 2 cores), not a wall-clock -fuzztime: with a duration, Go's fuzz
# coordinator up to go1.26 can fail a target with a bare "context deadline
# exceeded" at the deadline, having found nothing (golang/go#75804, fixed in
# go1.27). FUZZTIME=30s (or =100000x) overrides the
# count for every target. Minimizing a new input is capped at FUZZMINIMIZETIME.
FUZZTIME ?=
FUZZMINIMIZETIME ?= 2s
# The decoders of untrusted input, one package at a time (go test -fuzz
# accepts a single package): matrix.yaml, catalog.json, engines.vscode, PEP
# 440 specifiers, and inject (its output parses; --remove gives the input back).
FUZZ_TARGETS := ./matrix:FuzzParse:100000 ./catalog:FuzzParse:50000 ./vscode/engine:FuzzAccepts:300000 ./internal/pep440:FuzzSpecifier:150000 ./inject:FuzzInject:8000

fuzz: ## Run each fuzz target (matrix.yaml, catalog.json, engines.vscode and PEP 440 decoders, inject) for its count of inputs, or $(FUZZTIME)
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; n=$${rest#*:}; \
	  limit="$(FUZZTIME)"; [ -n "$$limit" ] || limit=$${n}x; \
	  echo "fuzz $$pkg $$name for $$limit"; \
	  $(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime "$$limit" -fuzzminimizetime $(FUZZMINIMIZETIME) "$$pkg"; \
	done

e2e: deps ## End-to-end only: real buildkitd, registry, QEMU and cosign
	bash tests/e2e/run.sh

bench: deps ## Benchmarks: the Go ones (ratios, request counts), then the realistic-size rebuild benchmark (tests/bench/run.sh; IMAGECTL_BENCH_RUNS=N for min/median of N)
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...
	$(GO) -C $(SCANNER_MODULE) test -run '^$$' -bench . -benchtime 1x ./...
	bash tests/bench/run.sh

# STATICCHECK_VERSION is the pinned staticcheck (honnef.co/go/tools) make lint
# installs into $(IMAGECTL_TEST_CACHE)/bin (its default checks).
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK := $(IMAGECTL_TEST_CACHE)/bin/staticcheck-$(STATICCHECK_VERSION)

$(STATICCHECK):
	@mkdir -p $(IMAGECTL_TEST_CACHE)/bin
	d=$$(mktemp -d) && GOBIN=$$d bash hack/timed.sh "staticcheck install" $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) && mv "$$d/staticcheck" $@ && rmdir "$$d"

# The scanner's module (two small packages over syft) gets staticcheck and
# the vet checks go test runs on it, not a go vet of its own, which would
# also run vet's analyzers over each of syft's ~1,300 packages for their
# facts (a cold run on 2 cores spent 585 s in that go vet, compiling
# included, and 38 s in staticcheck after it).
lint: $(STATICCHECK) ## gofmt, go vet and staticcheck (pinned: STATICCHECK_VERSION)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	bash hack/timed.sh "go vet" $(GO) vet ./...
	bash hack/timed.sh staticcheck $(STATICCHECK) ./...
	cd $(SCANNER_MODULE) && bash ../../hack/timed.sh "staticcheck (imagectl-sbom)" $(STATICCHECK) ./...

ci: lint test ## What .ci/run runs
