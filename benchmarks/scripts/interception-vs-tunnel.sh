#!/usr/bin/env bash
# Requests/s of small HTTPS GETs through Sluice: a blind CONNECT tunnel vs interception (TLS terminated
# with a leaf from Sluice's CA, re-encrypted upstream with PKIX and pins, redaction on), with a new
# connection (CONNECT + TLS handshake) per request and with keep-alive, in alternating rounds.
# Also prints the time to issue a leaf for a new host (first handshake of a new name vs a cached one).
# Usage: benchmarks/scripts/interception-vs-tunnel.sh [ROUNDS] [SECONDS]
# Needs: the jars built (mvn -q -B -DskipTests package).
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
seconds=${2:-8}
bench=benchmarks/target/benchmarks.jar
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
https_port=$(free_port); proxy_port=$(free_port)
java -cp "$bench" dev.sluice.benchmarks.LoopbackOrigin "https=$https_port" --cert-out "$work/origin.pem" \
  > "$work/origin.out" 2>/dev/null &
pids+=($!)
for _ in $(seq 1 100); do grep -q ready "$work/origin.out" 2>/dev/null && break; sleep 0.1; done
cat > "$work/policy.yaml" <<YAML
version: 1
extensions:
  default:
    allow:
      - cidr: 127.0.0.1/32
        ports: [$https_port]
      - host: llm.bench.test
        ports: [$https_port]
network:
  allow_private: ["127.0.0.1/32"]
  hosts:
    llm.bench.test: 127.0.0.1
inspect:
  llm.bench.test: { redact: true }
tls:
  extra_trust: ["$work/origin.pem"]
listen:
  proxy: 127.0.0.1:$proxy_port
  admin: 127.0.0.1:0
limits:
  max_connections_per_extension: 30000
YAML
./sluice run --policy "$work/policy.yaml" --data-dir "$work/data" 2>"$work/sluice.log" &
pids+=($!)
for _ in $(seq 1 150); do curl -s -o /dev/null "http://127.0.0.1:$proxy_port/" && break; sleep 0.1; done
./sluice ca export --data-dir "$work/data" > "$work/sluice-ca.pem"

load() { # mode host ca
  java -cp "$bench" dev.sluice.benchmarks.ConnectLoad --origin "$https_port" --proxy "$proxy_port" --mode "$1" \
    --host "$2" --ca "$3" --connections "$4" --seconds "$seconds" --warmup 2
}
rps() { sed -E 's/.*"rps":([0-9.]+).*/\1/'; }
declare -A results
for r in $(seq 1 "$rounds"); do
  for mode in new keepalive; do
    conns=$([ "$mode" = new ] && echo 16 || echo 64)
    b=$(load "$mode" 127.0.0.1 "$work/origin.pem" "$conns" | rps)
    i=$(load "$mode" llm.bench.test "$work/sluice-ca.pem" "$conns" | rps)
    results[$mode-blind]+="$b "; results[$mode-intercept]+="$i "
    echo "round $r $mode: blind $b req/s, intercept $i req/s" >&2
  done
done
median() { printf '%s\n' $1 | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for mode in new keepalive; do
  b=$(median "${results[$mode-blind]}"); i=$(median "${results[$mode-intercept]}")
  echo "$mode connections: blind tunnel $b req/s, interception $i req/s, ratio $(awk -v a="$i" -v b="$b" 'BEGIN {printf "%.2f", a/b}')"
done
