#!/usr/bin/env bash
# Side-by-side load harness: Sluice vs direct, LittleProxy, Squid, tinyproxy (and mitmproxy for
# interception), one loopback origin, alternating rounds. See benchmarks/README.md.
#
# Usage: benchmarks/harness/run.sh [--quick] [--rounds N] [--seconds S] [--systems a,b,...]
#                                  [--loads plain,https_new,https_keepalive,bulk,sse,idle,
#                                           tls_keepalive,tls_new,tls_new_full,sse_native] [--tunnels N]
#                                  [--out DIR] [--keep]
# Results: benchmarks/target/harness/results.md and results.json (or --out DIR).
#
# Installs what is missing with apt-get (squid, tinyproxy, wrk, mitmproxy; needs root), builds the jars
# when they are missing (mvn -q -B -DskipTests package), then runs harness.py. A peer that cannot be
# installed or started is skipped with a note; the exit status is non-zero only when the harness itself
# or Sluice (or the direct baseline) fails.
set -euo pipefail
cd "$(dirname "$0")/../.."

quick=0
for a in "$@"; do [ "$a" = "--quick" ] && quick=1; done
log() { echo "[run.sh] $*" >&2; }

# --- peers: one apt-get update, then install what is missing; never fatal.
need=()
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v squid >/dev/null 2>&1 || [ -x /usr/sbin/squid ] || need+=(squid)
command -v tinyproxy >/dev/null 2>&1 || [ -x /usr/bin/tinyproxy ] || need+=(tinyproxy)
command -v mitmdump >/dev/null 2>&1 || need+=(mitmproxy)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    # Bounded: in --quick (CI) mode a slow mirror must not eat the CI budget.
    limit=$([ "$quick" = 1 ] && echo 150 || echo 900)
    log "installing: ${need[*]}"
    timeout "$limit" apt-get update -q >/dev/null 2>&1 || log "apt-get update failed; trying with the lists we have"
    # All at once (one dpkg run, the quickest); if that fails, one at a time, so that one unavailable
    # package does not stop the others.
    if ! timeout "$limit" apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null 2>&1; then
      for pkg in "${need[@]}"; do
        timeout "$limit" apt-get install -y -q --no-install-recommends "$pkg" >/dev/null 2>&1 \
          || log "could not install $pkg; the systems that need it will be skipped"
      done
    fi
    # The Debian packages start their own daemons (squid on :3128, tinyproxy on :8888); the harness
    # runs its own instances with its own configs, so stop the packaged ones if they came up.
    for svc in squid tinyproxy; do
      if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
        systemctl stop "$svc" >/dev/null 2>&1 || true
      fi
    done
  else
    log "missing ${need[*]} and cannot apt-get install (not root or no apt-get); those systems will be skipped"
  fi
fi
command -v python3 >/dev/null 2>&1 || { echo "run.sh: python3 is needed" >&2; exit 1; }
command -v wrk >/dev/null 2>&1 || log "wrk missing: the plain HTTP load will fail for every system"

# --- jars: build only when missing.
if [ ! -f benchmarks/target/benchmarks.jar ] || [ ! -f proxy/target/sluice.jar ]; then
  log "building: mvn -q -B -DskipTests package"
  mvn -q -B -DskipTests package
fi

# --- open files: 2 per idle tunnel in the proxy; raise the soft limit to the hard one.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

exec python3 benchmarks/harness/harness.py "$@"
