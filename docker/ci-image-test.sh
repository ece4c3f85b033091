#!/usr/bin/env bash
# Builds the Sluice container image from docker/Dockerfile and runs it the way an operator does, on a
# machine with no container registry and no Docker daemon (as root, podman from Debian):
#  1. installs podman, runc and mmdebstrap (Debian packages) when missing;
#  2. builds a JRE base image from Debian packages (mmdebstrap: openjdk-17-jre-headless), once (cached
#     as localhost/sluice-jre17:bookworm; SLUICE_CI_REBUILD_BASE=1 rebuilds it);
#  3. builds the image with the Dockerfile, RUNTIME_IMAGE=that base, JAR_FROM=prebuilt (the jar and
#     native libraries that `mvn package` left in proxy/target/);
#  4. runs it read-only, as uid 10001, with a named data volume, a noexec tmpfs /tmp, host networking
#     on loopback ports only, and a policy that also opens the transparent listener (so the native epoll
#     library must load from the image, not from /tmp);
#  5. checks /healthz, an allowed request (to a loopback origin) and a denied one through it, the CA key
#     mode in the volume (0600, uid 10001), that the root is read-only, `sluice env` and `sluice audit
#     verify` inside the container, and a graceful SIGTERM (the shutdown lines, the chain verifies).
#
# What podman needs on these machines (found 2026-12): `--runtime runc` (crun fails on the hybrid
# cgroup layout), `--cgroup-manager=cgroupfs` (no systemd session), and ulimits below the hard limits
# (`--ulimit nofile=1024:1024 --ulimit nproc=1024:1024`; the defaults fail with "setrlimit: Operation
# not permitted"). Network: `--network=host`, so the container sees the host's loopback origin.
#
# Usage: docker/ci-image-test.sh   (from anywhere; needs root, curl, Java 17 and the built jars)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
start_s=$(date +%s)
log() { echo "image-test: $(( $(date +%s) - start_s ))s: $*"; }

base_image=localhost/sluice-jre17:bookworm
image=localhost/sluice:ci
name=sluice-ci-$$
volume=sluice-ci-data-$$
work=$(mktemp -d)
pids=()
podman_() { podman --runtime runc --cgroup-manager=cgroupfs "$@"; }
cleanup() {
  set +e
  podman_ rm -f -t 0 "$name" >/dev/null 2>&1
  podman_ volume rm -f "$volume" >/dev/null 2>&1
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "image-test: FAILED: $*" >&2; { podman_ logs "$name" 2>&1 || true; } | tail -40 >&2; exit 1; }

[ "$(id -u)" = 0 ] || { echo "image-test: needs root (podman as root on this kind of machine)" >&2; exit 1; }

# 1. Tools.
need=()
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v runc >/dev/null 2>&1 || need+=(runc)
command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
if [ "${#need[@]}" -gt 0 ]; then
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi
log "$(podman --version), runc $(runc --version | sed -n '1s/.* //p')"

# 2. The JRE base from Debian packages.
if [ "${SLUICE_CI_REBUILD_BASE:-0}" = 1 ] || ! podman_ image exists "$base_image"; then
  log "building $base_image with mmdebstrap (openjdk-17-jre-headless, ca-certificates)"
  mmdebstrap --quiet --variant=apt --include=openjdk-17-jre-headless,ca-certificates,passwd \
    bookworm "$work/base.tar"
  podman_ import --quiet "$work/base.tar" "$base_image" >/dev/null
  rm -f "$work/base.tar"
fi
log "base image $base_image: $(podman_ run --rm --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "$base_image" java -version 2>&1 | sed -n 1p)"

# 3. The image, from the Dockerfile, on the jar `mvn package` built.
if [ ! -f proxy/target/sluice.jar ] || [ ! -d proxy/target/native/META-INF/native ] || [ ! -f benchmarks/target/benchmarks.jar ]; then
  log "building the jars (mvn -B -q -DskipTests package)"
  mvn -B -q -DskipTests package
fi
ctx="$work/context"
mkdir -p "$ctx/docker" "$ctx/proxy/target/native/META-INF"
cp docker/Dockerfile docker/sluice.sh "$ctx/docker/"
cp proxy/target/sluice.jar "$ctx/proxy/target/"
cp -r proxy/target/native/META-INF/native "$ctx/proxy/target/native/META-INF/"
log "podman build (RUNTIME_IMAGE=$base_image, JAR_FROM=prebuilt)"
podman_ build --quiet --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
  --build-arg RUNTIME_IMAGE="$base_image" --build-arg BUILD_IMAGE="$base_image" --build-arg JAR_FROM=prebuilt \
  -f "$ctx/docker/Dockerfile" -t "$image" "$ctx" >/dev/null
log "built $image: $(podman_ image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'), user $(podman_ image inspect -f '{{.Config.User}}' "$image"), exposes $(podman_ image inspect -f '{{range $p, $v := .Config.ExposedPorts}}{{$p}} {{end}}' "$image")"

# 4. Run it: read-only, uid 10001, data volume, noexec /tmp, loopback ports only.
# Below the kernel's ephemeral range (ip_local_port_range, 32768+ by default), and unused by any socket, not
# only listening ones: a port picked inside the range was once taken by an outgoing connection's local
# port between the pick and the container's bind ("address already in use").
free_port() {
  local p low
  low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  while :; do
    p=$(( 20000 + RANDOM % (low - 20000) ))
    [ -n "$(ss -Htan "sport = :$p" 2>/dev/null)" ] || { echo "$p"; return; }
  done
}
proxy_port=$(free_port); admin_port=$(free_port); transparent_port=$(free_port); origin_port=$(free_port)
java -cp benchmarks/target/benchmarks.jar dev.sluice.benchmarks.LoopbackOrigin "http=$origin_port" >"$work/origin.log" 2>&1 &
pids+=($!)
cat > "$work/policy.yaml" <<YAML
version: 1
extensions:
  default:
    allow:
      - host: origin.test
        ports: [$origin_port]
network:
  allow_private: ["127.0.0.1/32"]
  hosts:
    origin.test: 127.0.0.1
listen:
  proxy: 127.0.0.1:$proxy_port
  admin: 127.0.0.1:$admin_port
  transparent: 127.0.0.1:$transparent_port
audit:
  stdout: true
YAML
chmod 0644 "$work/policy.yaml"
podman_ volume create "$volume" >/dev/null
run_flags=(--read-only --tmpfs /tmp:rw,noexec,nosuid,size=64m --user 10001:10001 --network=host
  --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --cap-drop=ALL --security-opt=no-new-privileges
  -v "$volume:/var/lib/sluice" -v "$work/policy.yaml:/etc/sluice/policy.yaml:ro")
podman_ run -d --name "$name" "${run_flags[@]}" "$image" run --shutdown-grace-seconds 10 >/dev/null
log "started $name (proxy 127.0.0.1:$proxy_port, admin :$admin_port, transparent :$transparent_port)"

# 5. Checks.
for _ in $(seq 1 300); do
  curl -sf -o /dev/null "http://127.0.0.1:$admin_port/healthz" && break
  [ "$(podman_ inspect -f '{{.State.Running}}' "$name")" = true ] || fail "the container exited"
  sleep 0.2
done
health=$(curl -s -o "$work/health.body" -w '%{http_code}' "http://127.0.0.1:$admin_port/healthz") || fail "/healthz did not answer"
[ "$health" = 200 ] || fail "/healthz: $health $(cat "$work/health.body")"
log "/healthz: $health $(head -c 80 "$work/health.body" | tr -d '\n')"
# (logs go to a file first: `podman logs | grep -q` fails under pipefail when grep stops reading early)
container_log() { podman_ logs "$name" >"$work/container.log" 2>&1 || true; }
container_log
grep -q 'transport=epoll' "$work/container.log" || fail "the native epoll transport did not load (noexec /tmp)"
log "native epoll transport loaded from /opt/sluice/native with a noexec /tmp"

allowed=$(curl -s -o "$work/allowed.body" -w '%{http_code}' -x "http://127.0.0.1:$proxy_port" "http://origin.test:$origin_port/") || true
[ "$allowed" = 200 ] || fail "allowed request: $allowed $(cat "$work/allowed.body")"
log "allowed request through the container: $allowed"
denied=$(curl -s -o "$work/denied.body" -w '%{http_code}' -x "http://127.0.0.1:$proxy_port" "http://denied.test/") || true
[ "$denied" = 403 ] && [ "$(cat "$work/denied.body")" = "sluice: not_allowlisted" ] || fail "denied request: $denied $(cat "$work/denied.body")"
log "denied request through the container: $denied $(cat "$work/denied.body")"

mountpoint=$(podman_ volume inspect -f '{{.Mountpoint}}' "$volume")
key_mode=$(stat -c '%a %u:%g' "$mountpoint/ca.key.pem") || fail "no CA key in the data volume"
[ "$key_mode" = "600 10001:10001" ] || fail "CA key mode: $key_mode (expected: 600 10001:10001)"
log "CA key in the volume: mode ${key_mode% *}, owner ${key_mode#* }"

uid=$(podman_ exec "$name" id -u)
[ "$uid" = 10001 ] || fail "runs as uid $uid"
if podman_ exec "$name" sh -c 'touch /opt/sluice/x' 2>/dev/null; then fail "the root file system is writable"; fi
if podman_ exec "$name" sh -c 'cp /bin/true /tmp/t && /tmp/t' 2>/dev/null; then fail "/tmp is executable"; fi
log "runs as uid $uid, root read-only, /tmp noexec"

env_out=$(podman_ exec "$name" sluice env --extension default 2>"$work/env.err") || fail "sluice env: $(cat "$work/env.err")"
grep -q "^# CA certificate: /var/lib/sluice/ca.crt.pem " <<<"$env_out" || fail "sluice env names another CA: $env_out"
grep -q "warning" "$work/env.err" && fail "sluice env warned: $(cat "$work/env.err")"
log "sluice env in the container names the running proxy's CA (/var/lib/sluice/ca.crt.pem)"
stdout_records() { podman_ logs "$name" 2>/dev/null >"$work/stdout.log" || true; grep -c '"event.id"' "$work/stdout.log" || true; }
for _ in $(seq 1 50); do
  [ "$(stdout_records)" -ge 2 ] && break
  sleep 0.1
done
[ "$(stdout_records)" -ge 2 ] || fail "no audit lines on standard output"
log "audit records on standard output (audit.stdout): $(stdout_records)"

stop_start=$(date +%s%N)
podman_ stop -t 30 "$name" >/dev/null
stop_ms=$(( ($(date +%s%N) - stop_start) / 1000000 ))
code=$(podman_ inspect -f '{{.State.ExitCode}}' "$name")
container_log
grep -q "sluice: shutting down" "$work/container.log" || fail "no shutdown line after SIGTERM"
grep -q "sluice: stopped; audit log /var/lib/sluice/audit.jsonl flushed and closed" "$work/container.log" \
  || fail "SIGTERM did not stop Sluice gracefully"
# The JVM exits with 143 (128 + SIGTERM) after its shutdown hooks ran.
[ "$code" = 143 ] || [ "$code" = 0 ] || fail "exit code after SIGTERM: $code"
log "SIGTERM: stopped gracefully in ${stop_ms} ms, exit code $code"
verify=$(podman_ run --rm "${run_flags[@]}" "$image" audit verify 2>&1) || fail "audit verify: $verify"
log "audit verify on the volume: $(grep -E '^(OK|ok)' <<<"$verify" || tail -1 <<<"$verify")"
log "PASSED in $(( $(date +%s) - start_s )) s"
