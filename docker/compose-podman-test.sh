#!/usr/bin/env bash
# On-demand check of docker/compose.yaml's topology with podman, on a machine with no Docker and no
# registry (so the compose file's alpine and curl images cannot be pulled): the same networks, the
# same netns service script (minus `apk add`, the tools image has iptables), Sluice in netns's
# namespace with compose's flags, and a sandbox container on the internal network only. Checks:
#  - the sandbox reaches an allowed origin (on the egress network) through Sluice with no proxy
#    variables (DNS answered by Sluice, TCP redirected to the transparent listener), and gets NXDOMAIN
#    for a name the policy does not allow;
#  - the sandbox cannot reach the admin listener (its port 9901 is redirected/dropped);
#  - the host reaches admin on its loopback (the published port);
#  - after `restart` of the Sluice container the rules are still there and the sandbox still gets out.
# Needs root, the images that docker/ci-image-test.sh builds (localhost/sluice:ci), and builds a small
# tools image (iptables, iproute2, curl, dig) with mmdebstrap once.
# What it does not check: compose's own parsing of the file (no docker compose here).
set -euo pipefail
cd "$(dirname "$0")/.."
start_s=$(date +%s)
log() { echo "compose-test: $(( $(date +%s) - start_s ))s: $*"; }
podman_() { podman --runtime runc --cgroup-manager=cgroupfs "$@"; }
lim=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
tools=localhost/sluice-tools:bookworm
image=localhost/sluice:ci
tag=$$
sandbox_net=sluice-sandbox-$tag
egress_net=sluice-egress-$tag
work=$(mktemp -d)
cleanup() {
  set +e
  for c in sandbox sluice netns origin; do podman_ rm -f -t 0 "compose-$c-$tag" >/dev/null 2>&1; done
  podman_ volume rm -f "compose-data-$tag" >/dev/null 2>&1
  podman_ network rm -f "$sandbox_net" "$egress_net" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "compose-test: FAILED: $*" >&2
  { podman_ logs "compose-sluice-$tag" 2>&1 || true; } | tail -30 >&2
  exit 1
}

podman_ image exists "$image" || { echo "compose-test: run docker/ci-image-test.sh first (builds $image)" >&2; exit 1; }
if ! podman_ image exists "$tools"; then
  log "building $tools with mmdebstrap"
  mmdebstrap --quiet --variant=apt --include=iptables,iproute2,curl,ca-certificates,dnsutils bookworm "$work/tools.tar"
  podman_ import --quiet "$work/tools.tar" "$tools" >/dev/null
  rm -f "$work/tools.tar"
fi

# compose.yaml's networks (the subnets, the internal flag) and addresses.
podman_ network create --internal --subnet 172.30.0.0/24 "$sandbox_net" >/dev/null
podman_ network create --subnet 172.31.0.0/24 "$egress_net" >/dev/null

# An origin on the egress network (stands for the internet): the JDK's HTTP server, answering 200 "origin".
mkdir -p "$work/origin"
cat > "$work/origin/Origin.java" <<'JAVA'
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
public class Origin {
    public static void main(String[] args) throws Exception {
        HttpServer s = HttpServer.create(new InetSocketAddress(8080), 50);
        s.createContext("/", x -> { byte[] b = "origin\n".getBytes(); x.sendResponseHeaders(200, b.length); x.getResponseBody().write(b); x.close(); });
        s.start();
    }
}
JAVA
javac -d "$work/origin" "$work/origin/Origin.java"
podman_ run -d --name "compose-origin-$tag" "${lim[@]}" --network "$egress_net:ip=172.31.0.3" \
  -v "$work/origin:/opt/origin:ro" --entrypoint java "$image" -cp /opt/origin Origin >/dev/null

# netns: compose.yaml's command, taken from the file (the lines after `apk add`, $$ unescaped).
script=$(awk '/apk add --no-cache iptables/{on=1; next} on && /^    healthcheck:/{exit} on' docker/compose.yaml \
  | sed -e 's/^        //' -e 's/\$\$/$/g')
grep -q "REDIRECT --to-ports 15001" <<<"$script" || fail "could not read netns's command from compose.yaml"
podman_ run -d --name "compose-netns-$tag" "${lim[@]}" --cap-add NET_ADMIN \
  --network "$sandbox_net:ip=172.30.0.2" --network "$egress_net:ip=172.31.0.2" -p 127.0.0.1:9901:9901/tcp \
  "$tools" sh -ec "$script" >/dev/null
for _ in $(seq 1 50); do podman_ exec "compose-netns-$tag" test -f /tmp/ready 2>/dev/null && break; sleep 0.2; done
podman_ exec "compose-netns-$tag" test -f /tmp/ready || fail "netns did not get ready: $(podman_ logs "compose-netns-$tag" 2>&1)"
log "netns up: $(podman_ exec "compose-netns-$tag" iptables -t nat -S PREROUTING | grep -c REDIRECT) REDIRECT rules"

# The policy: docker/policy.yaml's listen section; an extension for the sandbox that may reach the origin.
cat > "$work/policy.yaml" <<'YAML'
version: 1
extensions:
  sandbox:
    sources: ["172.30.0.10/32"]
    allow:
      - host: origin.test
        ports: [8080]
network:
  allow_private: ["172.31.0.3/32"]
  hosts:
    origin.test: 172.31.0.3
YAML
sed -n '/^listen:/,$p' docker/policy.yaml >> "$work/policy.yaml"
chmod 0644 "$work/policy.yaml"
podman_ volume create "compose-data-$tag" >/dev/null
podman_ run -d --name "compose-sluice-$tag" "${lim[@]}" --network "container:compose-netns-$tag" \
  --read-only --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges \
  -v "compose-data-$tag:/var/lib/sluice" -v "$work/policy.yaml:/etc/sluice/policy.yaml:ro" "$image" >/dev/null
wait_ready() {
  for _ in $(seq 1 150); do
    curl -sf -o /dev/null http://127.0.0.1:9901/readyz && return 0
    sleep 0.2
  done
  fail "Sluice's admin is not reachable on the host's 127.0.0.1:9901"
}
wait_ready
log "Sluice up in netns's namespace; admin reachable from the host on 127.0.0.1:9901"

sandbox() {
  podman_ run --rm "${lim[@]}" --network "$sandbox_net:ip=172.30.0.10" --dns 172.30.0.2 --read-only \
    --cap-drop ALL "$tools" "$@"
}
check_sandbox() {
  local got
  got=$(sandbox curl -s -m 10 -o /dev/null -w '%{http_code}' http://origin.test:8080/) || true
  [ "$got" = 200 ] || fail "$1: the sandbox's request to the allowed origin answered '$got'"
  log "$1: sandbox -> http://origin.test:8080/ (no proxy variables): $got"
}
check_sandbox "first start"
nx=$(sandbox dig +short +time=3 +tries=1 denied.test @172.30.0.2 A; sandbox dig +time=3 +tries=1 denied.test @172.30.0.2 A | grep -o 'status: [A-Z]*' || true)
grep -q NXDOMAIN <<<"$nx" || fail "a name the policy does not allow resolved: $nx"
log "sandbox: denied.test -> $(grep -o 'NXDOMAIN' <<<"$nx")"
admin=$(sandbox curl -s -m 5 -o /dev/null -w '%{http_code}' http://172.30.0.2:9901/metrics) || true
[ "$admin" != 200 ] || fail "the sandbox reached the admin listener"
log "sandbox -> 172.30.0.2:9901/metrics: '${admin}' (not the admin listener)"

podman_ restart -t 30 "compose-sluice-$tag" >/dev/null
wait_ready
check_sandbox "after restarting Sluice"
log "PASSED in $(( $(date +%s) - start_s )) s"
