#!/usr/bin/env bash
# Build and cache the tools that validate kgrag's deployment files (helm/, terraform/, docker-compose.yml)
# into .cache/tools/ (ignored by git). Idempotent: a tool whose binary and version stamp are present is
# not touched, so a second run takes well under a second.
#
#   scripts/tools/install-deploy-tools.sh [all|pyenv|helm|tofu|compose|promtool]...     (default: all)
#
# What it makes:
#   .cache/tools/helm      Helm, built from its Go module with the Go toolchain (the module proxy)
#   .cache/tools/tofu      OpenTofu, built from its Go module (its go.mod has replace directives, so
#                          `go install pkg@version` refuses it: it is built inside the downloaded module)
#   .cache/tools/pyenv/    a throwaway Python venv with python-hcl2 and kubernetes-validate (PyPI),
#                          kept out of the project's uv.lock
#   .cache/tools/docker-compose
#                          Docker Compose v2 (standalone binary), built from its Go module like tofu
#                          (exclude directives): `docker-compose config` validates docker-compose.yml
#                          without a Docker engine
#   .cache/tools/promtool  Prometheus's promtool, built from its Go module (cmd/promtool): lints and
#                          unit-tests helm/kgrag/rules/kgrag-alerts.yaml. Built last: the largest build,
#                          so a time budget spent on it never costs the others
#
# Settings (environment):
#   KGRAG_TOOLS_DIR                 where to put them (default <repo>/.cache/tools)
#   KGRAG_HELM_VERSION=v3.22.0      KGRAG_TOFU_VERSION=v1.12.6      KGRAG_COMPOSE_VERSION=v2.40.3
#   KGRAG_PROMTOOL_VERSION=v0.316.0 (Prometheus 3.x's Go module version)
#   KGRAG_PY_HCL2_VERSION=8.1.4     KGRAG_K8S_VALIDATE_VERSION=1.37.0
#   KGRAG_TOOLS_BUDGET_S=0          stop starting new builds after this many seconds (0: no limit); a
#                                   tool left unbuilt makes the tests use their fallback validators
#
# Exit status: 0 when every asked-for tool is present afterwards, 1 otherwise (the log says which).
# Go's own caches (GOMODCACHE, GOCACHE) make a rebuild after a wiped .cache/tools take seconds.

set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
TOOLS_DIR="${KGRAG_TOOLS_DIR:-$REPO_ROOT/.cache/tools}"
HELM_VERSION="${KGRAG_HELM_VERSION:-v3.22.0}"
TOFU_VERSION="${KGRAG_TOFU_VERSION:-v1.12.6}"
COMPOSE_VERSION="${KGRAG_COMPOSE_VERSION:-v2.40.3}"
PROMTOOL_VERSION="${KGRAG_PROMTOOL_VERSION:-v0.316.0}"
PY_HCL2_VERSION="${KGRAG_PY_HCL2_VERSION:-8.1.4}"
K8S_VALIDATE_VERSION="${KGRAG_K8S_VALIDATE_VERSION:-1.37.0}"
BUDGET_S="${KGRAG_TOOLS_BUDGET_S:-0}"
START_S=$SECONDS

mkdir -p "$TOOLS_DIR/logs"

# One install at a time (a test session and a person may start one together).
if command -v flock >/dev/null 2>&1; then
    exec 9>"$TOOLS_DIR/.lock"
    flock 9
fi

log() { printf '[deploy-tools %3ds] %s\n' "$((SECONDS - START_S))" "$*" >&2; }

skip_if_over_budget() {  # a build not yet started is skipped once the budget is spent
    if [[ "$BUDGET_S" -gt 0 && $((SECONDS - START_S)) -ge "$BUDGET_S" ]]; then
        log "$1: skipped, the time budget of ${BUDGET_S}s is spent"
        return 1
    fi
}

stamp_ok() {  # stamp_ok NAME EXPECTED: the binary exists and was built for EXPECTED
    [[ -x "$TOOLS_DIR/$1" && -f "$TOOLS_DIR/.$1.stamp" && "$(cat "$TOOLS_DIR/.$1.stamp")" == "$2" ]]
}

have_go() {
    if ! command -v go >/dev/null 2>&1; then
        log "go not found: cannot build $1"
        return 1
    fi
}

# ---------------------------------------------------------------------------------------------------
install_pyenv() {
    local want="python-hcl2==$PY_HCL2_VERSION kubernetes-validate==$K8S_VALIDATE_VERSION pyyaml"
    local venv="$TOOLS_DIR/pyenv"
    if [[ -x "$venv/bin/python" && -f "$venv/.stamp" && "$(cat "$venv/.stamp")" == "$want" ]]; then
        log "pyenv: cached ($want)"
        return 0
    fi
    skip_if_over_budget pyenv || return 1
    log "pyenv: creating $venv with $want"
    rm -rf "$venv"
    # shellcheck disable=SC2086
    if command -v uv >/dev/null 2>&1; then
        uv venv --quiet --python "$(command -v python3)" "$venv" >"$TOOLS_DIR/logs/pyenv.log" 2>&1 &&
            VIRTUAL_ENV="$venv" uv pip install --quiet --python "$venv/bin/python" $want \
                >>"$TOOLS_DIR/logs/pyenv.log" 2>&1
    else
        python3 -m venv "$venv" >"$TOOLS_DIR/logs/pyenv.log" 2>&1 &&
            "$venv/bin/pip" install --quiet --disable-pip-version-check $want >>"$TOOLS_DIR/logs/pyenv.log" 2>&1
    fi || {
        log "pyenv: install failed (see $TOOLS_DIR/logs/pyenv.log)"
        rm -rf "$venv"
        return 1
    }
    "$venv/bin/python" -c 'import hcl2, kubernetes_validate, yaml' || {
        log "pyenv: packages do not import"
        return 1
    }
    echo "$want" >"$venv/.stamp"
    log "pyenv: ready"
}

# ---------------------------------------------------------------------------------------------------
install_helm() {
    if stamp_ok helm "$HELM_VERSION"; then
        log "helm: cached ($HELM_VERSION)"
        return 0
    fi
    skip_if_over_budget helm || return 1
    have_go helm || return 1
    log "helm: building helm.sh/helm/v3/cmd/helm@$HELM_VERSION (first build: minutes)"
    local gomod k8s_minor
    # Released helm binaries default `helm template`/`lint` to the Kubernetes version of their client-go
    # (v0.N.x -> 1.N); a plain `go install` would leave 1.20. Read it from helm's go.mod.
    gomod="$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" 2>>"$TOOLS_DIR/logs/helm.log" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')" || {
        log "helm: cannot download the module (see $TOOLS_DIR/logs/helm.log)"
        return 1
    }
    k8s_minor="$(awk '$1 == "k8s.io/client-go" { split($2, v, "."); print v[2] }' "$gomod")"
    [[ -n "$k8s_minor" ]] || k8s_minor=33
    local ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
    ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
    ldflags+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$k8s_minor"
    ldflags+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$k8s_minor"
    if ! (cd "$TOOLS_DIR" && GOBIN="$TOOLS_DIR" CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
        go install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION") \
        >>"$TOOLS_DIR/logs/helm.log" 2>&1; then
        log "helm: build failed (see $TOOLS_DIR/logs/helm.log)"
        return 1
    fi
    echo "$HELM_VERSION" >"$TOOLS_DIR/.helm.stamp"
    log "helm: $("$TOOLS_DIR/helm" version --short)"
}

# ---------------------------------------------------------------------------------------------------
install_tofu() {
    if stamp_ok tofu "$TOFU_VERSION"; then
        log "tofu: cached ($TOFU_VERSION)"
        return 0
    fi
    skip_if_over_budget tofu || return 1
    have_go tofu || return 1
    log "tofu: building github.com/opentofu/opentofu/cmd/tofu $TOFU_VERSION (first build: minutes)"
    local dir
    dir="$(go mod download -json "github.com/opentofu/opentofu@$TOFU_VERSION" 2>>"$TOOLS_DIR/logs/tofu.log" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')" || {
        log "tofu: cannot download the module (see $TOOLS_DIR/logs/tofu.log)"
        return 1
    }
    # Built as the main module (its replace directives apply); the module cache is read-only, which
    # `go build -o elsewhere` does not mind. dev=no drops the "-dev" suffix of the version.
    if ! (cd "$dir" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=readonly" \
        go build -trimpath -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" \
        -o "$TOOLS_DIR/tofu" ./cmd/tofu) >>"$TOOLS_DIR/logs/tofu.log" 2>&1; then
        log "tofu: build failed (see $TOOLS_DIR/logs/tofu.log)"
        return 1
    fi
    echo "$TOFU_VERSION" >"$TOOLS_DIR/.tofu.stamp"
    log "tofu: $("$TOOLS_DIR/tofu" version 2>/dev/null | grep -m1 OpenTofu)"
}

# ---------------------------------------------------------------------------------------------------
install_compose() {
    if stamp_ok docker-compose "$COMPOSE_VERSION"; then
        log "compose: cached ($COMPOSE_VERSION)"
        return 0
    fi
    skip_if_over_budget compose || return 1
    have_go compose || return 1
    log "compose: building github.com/docker/compose/v2/cmd $COMPOSE_VERSION (first build: minutes)"
    local dir
    dir="$(go mod download -json "github.com/docker/compose/v2@$COMPOSE_VERSION" 2>>"$TOOLS_DIR/logs/compose.log" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')" || {
        log "compose: cannot download the module (see $TOOLS_DIR/logs/compose.log)"
        return 1
    }
    if ! (cd "$dir" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=readonly" \
        go build -trimpath -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" \
        -o "$TOOLS_DIR/docker-compose" ./cmd) >>"$TOOLS_DIR/logs/compose.log" 2>&1; then
        log "compose: build failed (see $TOOLS_DIR/logs/compose.log)"
        return 1
    fi
    echo "$COMPOSE_VERSION" >"$TOOLS_DIR/.docker-compose.stamp"
    log "compose: $("$TOOLS_DIR/docker-compose" version)"
}

# ---------------------------------------------------------------------------------------------------
install_promtool() {
    if stamp_ok promtool "$PROMTOOL_VERSION"; then
        log "promtool: cached ($PROMTOOL_VERSION)"
        return 0
    fi
    skip_if_over_budget promtool || return 1
    have_go promtool || return 1
    log "promtool: building github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION (first build: minutes)"
    if ! (cd "$TOOLS_DIR" && GOBIN="$TOOLS_DIR" CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
        go install -trimpath -ldflags "-s -w" "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION") \
        >>"$TOOLS_DIR/logs/promtool.log" 2>&1; then
        log "promtool: build failed (see $TOOLS_DIR/logs/promtool.log)"
        return 1
    fi
    echo "$PROMTOOL_VERSION" >"$TOOLS_DIR/.promtool.stamp"
    log "promtool: $("$TOOLS_DIR/promtool" --version 2>&1 | head -1)"
}

# ---------------------------------------------------------------------------------------------------
main() {
    local wanted=("$@") status=0 tool
    [[ ${#wanted[@]} -gt 0 ]] || wanted=(all)
    [[ "${wanted[*]}" == "all" ]] && wanted=(pyenv helm tofu compose promtool)
    for tool in "${wanted[@]}"; do
        case "$tool" in
            pyenv | helm | tofu | compose | promtool) ;;
            *)
                echo "usage: $0 [all|pyenv|helm|tofu|compose|promtool]..." >&2
                exit 2
                ;;
        esac
        "install_$tool" || status=1
    done
    log "done (status $status)"
    return "$status"
}

main "$@"
