# paysvc developer entry points. Uses `go` from PATH; no Docker needed.
#
#   make build          every Lambda bootstrap for arm64 -> bin/<name>/bootstrap
#   make build-amd64    the same for x86_64               -> bin/amd64/<name>/bootstrap
#   make run            local server, everything embedded (go run ./cmd/paysvc-local)
#   make test           bash .ci/test.sh
#   make fuzz           every native fuzz target, FUZZTIME each (default 30s): .ci/fuzz.sh
#   make soak           the ledger simulation with 10,000 seeds (embedded) and 1,000 (DynamoDB on moto): .ci/soak.sh
#   make lint-template  bash .ci/check-template.sh (cfn-lint + offline SAM transform)
#   make deploy-check   CONFIG_ENV=default|test|prod [PARAMETER_OVERRIDES='K=V ...']: refuse placeholders and unsafe settings
#   make deploy         CONFIG_ENV=... [PARAMETER_OVERRIDES='K=V ...'] [EMERGENCY=1]: deploy-check, lint-template,
#                       sam build, sam deploy (overrides ADD to samconfig.toml's; EMERGENCY=1 lets live deploy AllAtOnce)
#   make admin          build the admin CLI for this machine -> bin/paysvc-admin
#   make bench          Go benchmarks + cmd/paysvc-bench -> BENCHMARKS.md, docs/scale.md (a few minutes)
#   make clean
#
# `sam build` calls the build-<LogicalId> targets below with ARTIFACTS_DIR set
# (template.yaml: Metadata.BuildMethod makefile, CodeUri "."), with this
# directory as the working directory (samconfig.toml: build_in_source).

GO ?= go
BIN ?= bin

# Lambda function logical id -> Go main package under ./functions
FUNCTIONS := config sessions payments modifications lookups webhooks notifications dispatcher scheduler smoketest

# lambda.norpc: drop the legacy net/rpc path (provided.al2023 uses the Runtime API only).
LAMBDA_FLAGS := -tags lambda.norpc -trimpath -ldflags='-s -w'

.PHONY: all build build-amd64 run test fuzz soak lint-template deploy-check deploy admin bench clean help \
	build-ConfigFunction build-SessionsFunction build-PaymentsFunction \
	build-ModificationsFunction build-LookupsFunction build-WebhooksFunction \
	build-NotificationsFunction build-WebhookDispatcherFunction build-SchedulerFunction \
	build-SmokeTestFunction check-artifacts-dir

all: build

help:
	@sed -n '2,19p' Makefile

# --- sam build targets (one per function logical id) ---------------------------

check-artifacts-dir:
	@if [ -z "$(ARTIFACTS_DIR)" ]; then \
		echo "ARTIFACTS_DIR is not set: these targets are run by 'sam build' (or: make build-ConfigFunction ARTIFACTS_DIR=/tmp/out)" >&2; \
		exit 1; \
	fi

build-ConfigFunction: check-artifacts-dir
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o "$(ARTIFACTS_DIR)/bootstrap" ./functions/config

build-SessionsFunction: check-artifacts-dir
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o "$(ARTIFACTS_DIR)/bootstrap" ./functions/sessions

build-PaymentsFunction: check-artifacts-dir
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o "$(ARTIFACTS_DIR)/bootstrap" ./functions/payments

build-ModificationsFunction: check-artifacts-dir
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o "$(ARTIFACTS_DIR)/bootstrap" ./functions/modifications

build-LookupsFunction: check-artifacts-dir
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o "$(ARTIFACTS_DIR)/bootstrap" ./functions/lookups

build-WebhooksFunction: check-artifacts-dir
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o "$(ARTIFACTS_DIR)/bootstrap" ./functions/webhooks

build-NotificationsFunction: check-artifacts-dir
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o "$(ARTIFACTS_DIR)/bootstrap" ./functions/notifications

build-WebhookDispatcherFunction: check-artifacts-dir
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o "$(ARTIFACTS_DIR)/bootstrap" ./functions/dispatcher

build-SchedulerFunction: check-artifacts-dir
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o "$(ARTIFACTS_DIR)/bootstrap" ./functions/scheduler

build-SmokeTestFunction: check-artifacts-dir
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o "$(ARTIFACTS_DIR)/bootstrap" ./functions/smoketest

# --- local builds ----------------------------------------------------------------

build:
	@set -e; for f in $(FUNCTIONS); do \
		echo "build $$f (linux/arm64) -> $(BIN)/$$f/bootstrap"; \
		GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(BIN)/$$f/bootstrap ./functions/$$f; \
	done

build-amd64:
	@set -e; for f in $(FUNCTIONS); do \
		echo "build $$f (linux/amd64) -> $(BIN)/amd64/$$f/bootstrap"; \
		GOOS=linux GOARCH=amd64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(BIN)/amd64/$$f/bootstrap ./functions/$$f; \
	done

run:
	$(GO) run ./cmd/paysvc-local

test:
	bash .ci/test.sh

# Fuzzing (make test runs the seed corpora only, as tests): FUZZTIME=10m for
# a long run; findings land in the package's testdata/fuzz/.
FUZZTIME ?= 30s
fuzz:
	FUZZTIME=$(FUZZTIME) bash .ci/fuzz.sh

# The ledger simulation (tests/ledger_simulation_test.go) at soak counts;
# PAYSVC_SIM_SEEDS_EMBEDDED / PAYSVC_SIM_SEEDS_DYNAMO override them.
soak:
	bash .ci/soak.sh

lint-template:
	bash .ci/check-template.sh

# The samconfig.toml environment deploy-check and deploy use.
CONFIG_ENV ?= default
# Parameter overrides ADDED to the environment's parameter_overrides (a key
# given here replaces that key only), e.g. PARAMETER_OVERRIDES='LogLevel=debug'.
# `sam deploy --parameter-overrides` alone would replace the whole list:
# deploy passes sam the merged list deploy-check prints, so what is
# checked is what is deployed.
PARAMETER_OVERRIDES ?=
# EMERGENCY=1: a live deploy with DeploymentStrategy=AllAtOnce (a fix that
# cannot wait for the canary) passes deploy-check with a warning.
EMERGENCY ?=
SAMCONFIG ?= samconfig.toml
SAM ?= sam
DEPLOY_CHECK = SAMCONFIG="$(SAMCONFIG)" bash .ci/deploy-check.sh --config-env "$(CONFIG_ENV)" \
	--parameter-overrides '$(PARAMETER_OVERRIDES)' $(if $(EMERGENCY),--emergency)

deploy-check:
	$(DEPLOY_CHECK)

deploy: deploy-check lint-template
	$(SAM) build --config-env "$(CONFIG_ENV)" --config-file "$(SAMCONFIG)"
	@overrides="$$($(DEPLOY_CHECK) --print-overrides)" || exit 1; \
	echo "$(SAM) deploy --config-env $(CONFIG_ENV) --config-file $(SAMCONFIG) --parameter-overrides $$overrides"; \
	$(SAM) deploy --config-env "$(CONFIG_ENV)" --config-file "$(SAMCONFIG)" --parameter-overrides "$$overrides"

# The admin CLI as a binary: its exit codes (0 ok, 1 failure, 2 usage error)
# reach the shell as they are (`go run` turns every failure into 1).
admin:
	$(GO) build -o $(BIN)/paysvc-admin ./cmd/paysvc-admin
	@echo "built $(BIN)/paysvc-admin"

# Hot-path Go benchmarks (one package at a time, -p 1: two benchmark
# binaries at once on a small machine would each measure the other's load),
# then the overhead / round-trip / cold-start / webhook
# measurements of cmd/paysvc-bench, written to BENCHMARKS.md, and its scale
# section (DynamoDB capacity model, cost of a payment) into docs/scale.md.
# Its moto figures are a stock moto's: the speed-ups the tests' moto loads
# (internal/motoserver/speedups) are left out.
bench:
	@set -e; gobench=$$(mktemp); trap 'rm -f "$$gobench"' EXIT; rc=0; \
	export PAYSVC_MOTO_SPEEDUPS=off; \
	echo "== go test -bench (hot paths; PAYSVC_BENCH_FULL=1 enables the DynamoDB variants)"; \
	PAYSVC_BENCH_FULL=1 $(GO) test -p 1 -run '^$$' -bench . -benchmem -count 3 -timeout 30m ./... >"$$gobench" 2>&1 || rc=$$?; \
	grep -E '^(pkg:|Benchmark|FAIL|--- FAIL|# )' "$$gobench" || true; \
	echo "== paysvc-bench: overhead, store round trips, cold start, webhooks (a few minutes)"; \
	$(GO) run ./cmd/paysvc-bench -gobench "$$gobench" -out BENCHMARKS.md -scale-out docs/scale.md $(BENCH_FLAGS); \
	echo "wrote BENCHMARKS.md and the generated part of docs/scale.md"; \
	if [ $$rc -ne 0 ]; then echo "make bench: go test -bench failed (listed in BENCHMARKS.md)" >&2; exit $$rc; fi

clean:
	rm -rf $(BIN) .aws-sam
