#!/usr/bin/env bash
# First-cut comparison for the foundation: small plain-HTTP responses (wrk, keep-alive, 64 connections)
# and a 1 GiB CONNECT download, each directly and through Sluice, in alternating rounds on loopback.
# Usage: benchmarks/scripts/explicit-vs-direct.sh [ROUNDS] [SECONDS]
# Needs: the jars built (mvn -q -B -DskipTests package), wrk (apt-get install wrk).
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
seconds=${2:-10}
command -v wrk >/dev/null || { echo "needs wrk: apt-get install -y wrk" >&2; exit 1; }
bench=benchmarks/target/benchmarks.jar
[ -f "$bench" ] && [ -f proxy/target/sluice.jar ] || { echo "build first: mvn -q -B -DskipTests package" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

http_port=$(free_port); bulk_port=$(free_port); proxy_port=$(free_port)
java -cp "$bench" dev.sluice.benchmarks.LoopbackOrigin http "$http_port" 2>/dev/null & pids+=($!)
java -cp "$bench" dev.sluice.benchmarks.LoopbackOrigin bulk "$bulk_port" $((1024*1024*1024)) 2>/dev/null & pids+=($!)
cat > "$work/policy.yaml" <<YAML
version: 1
extensions:
  default:
    allow:
      - cidr: 127.0.0.1/32
        ports: [$http_port, $bulk_port]
network:
  allow_private: ["127.0.0.1/32"]
listen:
  proxy: 127.0.0.1:$proxy_port
YAML
./sluice run --policy "$work/policy.yaml" --data-dir "$work" 2>"$work/sluice.log" & pids+=($!)
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$proxy_port/" && break; sleep 0.1; done
sleep 1

rps() { awk '/Requests\/sec/ {print $2}'; }
lat() { awk '/Latency/ {print $2}'; }
# warm-up
wrk -t1 -c64 -d3s "http://127.0.0.1:$http_port/small" >/dev/null
ORIGIN="127.0.0.1:$http_port" wrk -t1 -c64 -d3s -s benchmarks/scripts/absolute-form.lua "http://127.0.0.1:$proxy_port/" >/dev/null
declare -a direct_rps sluice_rps direct_bulk tunnel_bulk
for r in $(seq 1 "$rounds"); do
  out=$(wrk -t1 -c64 -d"${seconds}s" --latency "http://127.0.0.1:$http_port/small")
  direct_rps+=("$(echo "$out" | rps)")
  out=$(ORIGIN="127.0.0.1:$http_port" wrk -t1 -c64 -d"${seconds}s" --latency -s benchmarks/scripts/absolute-form.lua "http://127.0.0.1:$proxy_port/")
  sluice_rps+=("$(echo "$out" | rps)")
  echo "round $r plain: direct ${direct_rps[-1]} req/s, sluice ${sluice_rps[-1]} req/s" >&2
  direct_bulk+=("$(java -cp "$bench" dev.sluice.benchmarks.BulkDownload "$bulk_port" | sed 's/.*MBps=//')")
  tunnel_bulk+=("$(java -cp "$bench" dev.sluice.benchmarks.BulkDownload "$bulk_port" "$proxy_port" | sed 's/.*MBps=//')")
  echo "round $r bulk: direct ${direct_bulk[-1]} MB/s, tunnel ${tunnel_bulk[-1]} MB/s" >&2
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
d=$(median "${direct_rps[@]}"); s=$(median "${sluice_rps[@]}")
db=$(median "${direct_bulk[@]}"); tb=$(median "${tunnel_bulk[@]}")
echo "plain HTTP small responses, 64 connections, median of $rounds x ${seconds}s:"
echo "  direct $d req/s, sluice $s req/s, ratio $(awk -v a="$s" -v b="$d" 'BEGIN {printf "%.2f", a/b}')"
echo "CONNECT bulk 1 GiB, median of $rounds:"
echo "  direct $db MB/s, tunnel $tb MB/s, ratio $(awk -v a="$tb" -v b="$db" 'BEGIN {printf "%.2f", a/b}')"
echo "audit lines written (rotated files included): $(cat "$work"/audit.jsonl* | wc -l)"
