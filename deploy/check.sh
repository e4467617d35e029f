#!/usr/bin/env bash
# Checks every file under deploy/ with the tool made for it; .ci/run runs it after the tests.
#
#   deploy/check.sh [BUILD_DIR]      (default build/debug: its faultline binary, and its CPack
#                                     config for the package test)
#
#   systemd unit         systemd-analyze verify, and systemd-analyze security (exposure <= 2.0);
#                        systemd/check-syscalls.py: every system call the agent makes (strace)
#                        is allowed by the unit's SystemCallFilter=
#   every YAML file      yamllint (deploy/.yamllint.yml)
#   Prometheus           promtool check config (prometheus.yml, federation.yml,
#                        compose/prometheus.yml),
#                        promtool check rules, promtool test rules (prometheus/tests/)
#   Alertmanager         amtool check-config (compose/alertmanager.yml)
#   Grafana dashboard    tools/check-dashboard.mjs (structure), promtool check rules (its PromQL)
#   Dockerfile           dockerfile-utils lint
#   Kubernetes           tools/validate-kubernetes.mjs (kubernetes-models schemas, unknown fields)
#   Compose              dclint (Compose Specification schema and conventions), mounts exist
#   agent configs        faultline check on every config shipped (package, image, ConfigMaps,
#                        compose), faultline rules test on the ConfigMap's rules
#   Debian package       debian/test-package.sh (root only: dpkg -i, use, dpkg --purge)
#
# Debian packages come from scripts/install-deps.sh; the npm checkers are installed from
# deploy/tools/package-lock.json into BUILD_DIR/../deploy-tools (never committed). Each step is
# bounded in time; the whole takes about a minute once the npm packages are there.
# The end-to-end test with a real Prometheus is a ctest test (tests/deploy/prometheus_test.cc).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
build="$(realpath "${1:-build/debug}")"
faultline="$build/faultline"
tools="$(dirname "$build")/deploy-tools"
[ -x "$faultline" ] || { echo "deploy/check.sh: no $faultline; build first" >&2; exit 2; }

failures=()
step() {
  local name="$1" seconds="$2"
  shift 2
  local start=$SECONDS
  # Through bash -c, so that a step may be one of the (exported) functions below.
  if timeout "$seconds" bash -c '"$@"' step "$@"; then
    echo "ok    $name ($((SECONDS - start)) s)"
  else
    echo "FAIL  $name (exit $?)"
    failures+=("$name")
  fi
}

scripts/install-deps.sh
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "deploy/check.sh: node and npm are needed for the npm checkers" >&2
  exit 2
fi

tmp="$(mktemp -d /tmp/faultline-deploy-check.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
export root build faultline tools tmp

install_npm_tools() {
  mkdir -p "$tools"
  cp deploy/tools/package.json deploy/tools/package-lock.json deploy/tools/*.mjs "$tools/"
  if ! cmp -s deploy/tools/package-lock.json "$tools/node_modules/.package-lock.json.installed"; then
    (cd "$tools" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) &&
      cp deploy/tools/package-lock.json "$tools/node_modules/.package-lock.json.installed"
  fi
}
export -f install_npm_tools
step "npm ci of the checkers" 600 install_npm_tools

systemd_unit() {
  # verify checks that ExecStart's binary exists: the unit as shipped, with the built binary
  # standing in for /usr/bin/faultline.
  sed "s#/usr/bin/faultline#$faultline#g" deploy/systemd/faultline.service >"$tmp/faultline.service"
  systemd-analyze verify "$tmp/faultline.service" &&
    systemd-analyze security --offline=yes --threshold=20 "$tmp/faultline.service" >/dev/null
}
export -f systemd_unit
step "systemd-analyze verify, security" 60 systemd_unit
step "the agent's system calls within SystemCallFilter= (strace)" 120 \
  python3 deploy/systemd/check-syscalls.py "$faultline" "$root/rules"

# From deploy/, where the ignore paths of .yamllint.yml are relative to.
yaml_lint() { cd deploy && yamllint -c .yamllint.yml -s .; }
export -f yaml_lint
step "yamllint" 60 yaml_lint

compose_prometheus() {
  # compose/prometheus.yml sees deploy/prometheus/rules at rules/, as in its container.
  mkdir -p "$tmp/compose-prometheus"
  cp deploy/compose/prometheus.yml "$tmp/compose-prometheus/"
  cp -r deploy/prometheus/rules "$tmp/compose-prometheus/rules"
  promtool check config "$tmp/compose-prometheus/prometheus.yml"
}
export -f compose_prometheus
step "promtool check config" 60 promtool check config deploy/prometheus/prometheus.yml \
  deploy/prometheus/federation.yml
step "promtool check config (compose)" 60 compose_prometheus
step "promtool check rules" 60 promtool check rules deploy/prometheus/rules/*.yml
step "promtool test rules" 120 promtool test rules deploy/prometheus/tests/*.test.yml
step "amtool check-config (compose)" 60 amtool check-config deploy/compose/alertmanager.yml

dashboard() {
  node "$tools/check-dashboard.mjs" deploy/grafana/dashboards/faultline.json \
    "$tmp/dashboard.rules.yml" && promtool check rules "$tmp/dashboard.rules.yml"
}
export -f dashboard
step "grafana dashboard (structure, PromQL)" 60 dashboard
step "dockerfile-utils lint" 60 "$tools/node_modules/.bin/dockerfile-utils" lint \
  deploy/container/Dockerfile
step "kubernetes schemas" 60 node "$tools/validate-kubernetes.mjs" deploy/kubernetes/*.yaml
compose() {
  "$tools/node_modules/.bin/dclint" --color=false --max-warnings 0 deploy/compose/compose.yaml &&
    node "$tools/check-compose.mjs" deploy/compose/compose.yaml
}
export -f compose
step "compose (dclint, mounts)" 60 compose

# Each shipped config, with its absolute paths pointed at this tree: the pack at
# /usr/share/faultline/rules, the ConfigMap's rules at /etc/faultline-rules.
agent_configs() {
  node "$tools/extract-configmaps.mjs" "$tmp/configmaps" deploy/kubernetes/*.yaml >/dev/null
  local config
  for config in deploy/debian/faultline.yaml deploy/container/faultline.yaml \
                deploy/compose/faultline.yaml "$tmp"/configmaps/*/faultline.yaml; do
    sed -e "s#/usr/share/faultline/rules#$root/rules#g" \
        -e "s#/etc/faultline-rules#$tmp/configmaps/faultline-rules#g" "$config" >"$tmp/config.yaml"
    echo "$config:"
    "$faultline" check -c "$tmp/config.yaml" || return 1
  done
  "$faultline" rules test "$tmp/configmaps/faultline-rules"
}
export -f agent_configs
step "faultline check of every shipped config" 120 agent_configs

if [ "$(id -u)" -eq 0 ]; then
  step "Debian package (build, dpkg -i, use, purge)" 600 deploy/debian/test-package.sh "$build"
else
  echo "skip  Debian package: needs root"
fi

if [ ${#failures[@]} -ne 0 ]; then
  echo "deploy/check.sh: ${#failures[@]} failed: ${failures[*]}"
  exit 1
fi
echo "deploy/check.sh: every check passed"
