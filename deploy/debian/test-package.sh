#!/usr/bin/env bash
# The Debian package end to end, as root on a Debian 12 machine (CI): builds it with
# `cpack -G DEB` from BUILD_DIR (default build/debug), checks what it holds, installs it with
# dpkg -i, uses it from / as a user would (`faultline --version`, `faultline scan` of an example
# log, `faultline check` of the installed config as the faultline user, the unit through
# systemd-analyze verify, `faultline run` as the faultline user until it is ready), then purges
# it and checks that nothing of it is left: files, config, state, the unit's links, the user
# and group.
#
# Refuses to run when faultline is already installed (it would be replaced and purged).
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build/debug}"

if [ "$(id -u)" -ne 0 ]; then
  echo "test-package: needs root (dpkg -i); skipped" >&2
  exit 0
fi
if dpkg-query -W -f='${Status}' faultline 2>/dev/null | grep "ok installed" >/dev/null; then
  echo "test-package: a faultline package is installed already; not touching it" >&2
  exit 1
fi

out="$(mktemp -d /tmp/faultline-package.XXXXXX)"
installed=0
cleanup() {
  if [ "$installed" -eq 1 ]; then dpkg_waiting "$out/cleanup.log" --purge faultline || true; fi
  rm -rf "$out"
}
trap cleanup EXIT
fail() { echo "test-package: FAILED: $*" >&2; exit 1; }
# dpkg refuses at once while another dpkg or apt runs (a developer's machine, not CI): retry for
# up to two minutes while that is the reason. Output goes to the log file $1.
dpkg_waiting() {
  local log="$1" tries=0
  shift
  until dpkg "$@" >"$log" 2>&1; do
    grep -q "lock" "$log" && [ $((tries += 1)) -lt 60 ] || return 1
    sleep 2
  done
}

echo "== cpack -G DEB ($build)"
(cd "$build" && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log"; fail "cpack"; }
deb="$(ls "$out"/faultline_*.deb)"
echo "built $(basename "$deb") ($(du -h "$deb" | cut -f1))"

echo "== contents"
dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$out/files"
for f in /usr/bin/faultline /etc/faultline/faultline.yaml /usr/lib/systemd/system/faultline.service \
         /usr/share/faultline/rules/README.md /usr/share/faultline/config/faultline.yaml \
         /usr/share/faultline/examples/logs/nccl_job.log /usr/share/doc/faultline/README.md \
         /usr/share/doc/faultline/docs/design.md; do
  grep -qx "$f" "$out/files" || fail "$f is not in the package"
done
echo "$(grep -c '^/usr/share/faultline/rules/.*\.yaml$' "$out/files") rule files"
dpkg-deb --field "$deb" Depends | tr ',' '\n' | sed 's/^ */  depends: /'
dpkg-deb --ctrl-tarfile "$deb" | tar -t | grep -x './conffiles' >/dev/null || fail "no conffiles"
dpkg-deb --info "$deb" conffiles | grep -x /etc/faultline/faultline.yaml >/dev/null ||
  fail "/etc/faultline/faultline.yaml is not a conffile"

echo "== dpkg -i"
installed=1
# Runtime libraries the package depends on come from the archive (a fresh machine has the -dev
# packages, hence the libraries, from scripts/install-deps.sh; apt fixes what is missing).
if ! dpkg_waiting "$out/dpkg.log" -i "$deb"; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -f -o DPkg::Lock::Timeout=120 \
    >>"$out/dpkg.log" 2>&1 || { cat "$out/dpkg.log"; fail "dpkg -i"; }
fi
getent passwd faultline >/dev/null || fail "no faultline user after install"
[ "$(getent passwd faultline | cut -d: -f7)" = /usr/sbin/nologin ] || fail "faultline user has a shell"
[ "$(stat -c %U /var/lib/faultline)" = faultline ] || fail "/var/lib/faultline is not owned by faultline"
[ -L /etc/systemd/system/multi-user.target.wants/faultline.service ] ||
  fail "the service was not enabled"

echo "== use it from /"
cd /
version="$(faultline --version)"
echo "$version"
[[ "$version" == faultline* ]] || fail "faultline --version printed '$version'"
set +e
faultline scan --format json /usr/share/faultline/examples/logs/nccl_job.log >"$out/scan.json"
scan_status=$?
set -e
[ "$scan_status" -eq 1 ] || fail "scan of an example log exited $scan_status, expected 1 (failures found)"
python3 -c '
import json, sys
report = json.load(open(sys.argv[1]))
sigs = [f["signature"] for f in report["findings"]]
print("scan found:", ", ".join(sigs))
sys.exit(0 if sigs else 1)
' "$out/scan.json" || fail "scan found nothing"
faultline rules list --format json | python3 -c '
import json, sys
rules = json.load(sys.stdin)
outside = [r["file"] for r in rules if not r["file"].startswith("/usr/share/faultline/rules/")]
print(len(rules), "rules, all from /usr/share/faultline/rules" if not outside else outside[:3])
sys.exit(1 if outside or not rules else 0)
' || fail "the installed binary does not load the installed pack"
runuser -u faultline -- faultline check -c /etc/faultline/faultline.yaml ||
  fail "the faultline user cannot check the installed config"
systemd-analyze verify /usr/lib/systemd/system/faultline.service || fail "systemd-analyze verify"
# The daemon as the service starts it: as faultline, with its groups, the installed config and
# the cache folder, until /readyz answers; then SIGTERM must stop it cleanly. Skipped when
# something else holds the config's port (a developer's machine).
if (exec 3<>/dev/tcp/127.0.0.1/9464) 2>/dev/null; then
  echo "port 9464 is taken: the installed agent is not started"
else
  FAULTLINE_CACHE_DIR=/var/cache/faultline setpriv --reuid=faultline --regid=faultline \
    --init-groups faultline run -c /etc/faultline/faultline.yaml >"$out/run.log" 2>&1 &
  agent=$!
  ready=0
  for _ in $(seq 1 150); do
    if python3 -c 'import urllib.request, sys
sys.exit(urllib.request.urlopen("http://127.0.0.1:9464/readyz", timeout=1).status != 200)' \
      2>/dev/null; then
      ready=1
      break
    fi
    kill -0 "$agent" 2>/dev/null || break
    sleep 0.2
  done
  [ "$ready" -eq 1 ] || { cat "$out/run.log"; kill "$agent" 2>/dev/null; fail "the agent did not become ready"; }
  kill -TERM "$agent"
  wait "$agent" || { cat "$out/run.log"; fail "the agent did not stop cleanly"; }
  echo "faultline run as the faultline user: ready, stopped cleanly"
fi
cd - >/dev/null

echo "== dpkg --purge"
dpkg_waiting "$out/purge.log" --purge faultline || { cat "$out/purge.log"; fail "dpkg --purge"; }
installed=0
for f in /usr/bin/faultline /etc/faultline /usr/share/faultline /usr/share/doc/faultline \
         /usr/lib/systemd/system/faultline.service /var/lib/faultline /var/cache/faultline \
         /etc/systemd/system/multi-user.target.wants/faultline.service; do
  if [ -e "$f" ] || [ -L "$f" ]; then fail "$f is left after purge"; fi
done
! getent passwd faultline >/dev/null || fail "the faultline user is left after purge"
! getent group faultline >/dev/null || fail "the faultline group is left after purge"
if dpkg-query -W faultline >/dev/null 2>&1; then fail "dpkg still knows faultline"; fi
echo "test-package: passed"
