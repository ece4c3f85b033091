#!/usr/bin/env bash
# Intercepted requests/s and proxy CPU per request: HTTP/1.1 keep-alive vs HTTP/2 clients, against an
# HTTP/1.1-only origin and an origin that offers h2 (so an HTTP/2 client's upstream leg is h2), in the
# same run. Loopback only: two Node HTTPS origins with a throwaway CA (13-byte answers): llm.bench.test
# (https module: HTTP/1.1, keep-alive) and h2.bench.test (http2.createSecureServer, ALPN h2 and
# http/1.1), Sluice (proxy/target/sluice.jar; build it with mvn -q -B -DskipTests package) with both
# hosts under `inspect`, then benchmarks/scripts/h2-vs-h1-load.js in h1 and h2 modes against each
# origin, in turn, for ROUNDS rounds of SECONDS s each at CONCURRENCY (C keep-alive tunnels vs C
# streams on one tunnel). An HTTP/1.1 client's upstream stays HTTP/1.1 whatever the origin offers.
# Usage: benchmarks/scripts/h2-vs-h1-interception.sh [SECONDS=5] [CONCURRENCY=16] [ROUNDS=2]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-5}
concurrency=${2:-16}
rounds=${3:-2}
host=llm.bench.test
h2host=h2.bench.test
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# A throwaway origin CA and leaf.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench origin CA" \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$host" \
  -keyout "$work/leaf.key" -out "$work/leaf.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s,DNS:%s\n' "$host" "$h2host" > "$work/ext"
openssl x509 -req -in "$work/leaf.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -days 2 \
  -extfile "$work/ext" -out "$work/leaf.pem" 2>/dev/null

origin_port=$(free_port)
node -e '
const https = require("https"); const fs = require("fs");
https.createServer({ key: fs.readFileSync(process.argv[1]), cert: fs.readFileSync(process.argv[2]), keepAliveTimeout: 60000 },
  (req, res) => { req.resume(); res.writeHead(200, { "content-type": "text/plain", "content-length": 13 }); res.end("hello, bench\n"); })
  .listen(Number(process.argv[3]), "127.0.0.1");' "$work/leaf.key" "$work/leaf.pem" "$origin_port" &
pids+=($!)
wait_port "$origin_port"
h2_origin_port=$(free_port)
node -e '
const http2 = require("http2"); const fs = require("fs");
http2.createSecureServer({ key: fs.readFileSync(process.argv[1]), cert: fs.readFileSync(process.argv[2]), allowHTTP1: true },
  (req, res) => { req.resume(); res.writeHead(200, { "content-type": "text/plain", "content-length": 13 }); res.end("hello, bench\n"); })
  .listen(Number(process.argv[3]), "127.0.0.1");' "$work/leaf.key" "$work/leaf.pem" "$h2_origin_port" &
pids+=($!)
wait_port "$h2_origin_port"

proxy_port=$(free_port)
mkdir -p "$work/data"
cat > "$work/policy.yaml" <<YAML
version: 1
extensions:
  default:
    allow:
      - host: $host
        ports: [$origin_port]
      - host: $h2host
        ports: [$h2_origin_port]
network:
  allow_private: ["127.0.0.1/32"]
  hosts:
    $host: 127.0.0.1
    $h2host: 127.0.0.1
inspect:
  $host: { redact: true }
  $h2host: { redact: true }
tls:
  extra_trust: ["$work/ca.pem"]
limits:
  max_connections_per_extension: 4096
listen:
  proxy: 127.0.0.1:$proxy_port
YAML
"$root/sluice" run --policy "$work/policy.yaml" --data-dir "$work/data" >"$work/sluice.log" 2>&1 &
sluice_pid=$!
pids+=($sluice_pid)
wait_port "$proxy_port" || { tail -20 "$work/sluice.log" >&2; exit 1; }
# The JVM behind the launcher script (exec'd, so the same pid); the audit log is on, in the data dir.
# load MODE SECONDS ORIGIN(h1|h2)
load() {
  local h=$host p=$origin_port
  if [ "$3" = h2 ]; then h=$h2host; p=$h2_origin_port; fi
  node "$root/benchmarks/scripts/h2-vs-h1-load.js" "$1" "$proxy_port" "$h" "$p" \
    "$work/data/ca.crt.pem" "$2" "$concurrency"
}
for o in h1 h2; do load h1 2 "$o" >/dev/null; load h2 2 "$o" >/dev/null; done   # warm-up (JIT, leaf issuance)
echo "| round | client | origin offers | upstream leg | requests/s | errors | proxy CPU ms per request |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for r in $(seq 1 "$rounds"); do
  for o in h1 h2; do
    for mode in h1 h2; do
      before=$(cpu_ticks "$sluice_pid")
      out=$(load "$mode" "$seconds" "$o")
      after=$(cpu_ticks "$sluice_pid")
      python3 - "$r" "$mode" "$o" "$out" "$before" "$after" "$(getconf CLK_TCK)" <<'PY'
import json, sys
r, mode, o, out, before, after, hz = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
n = max(out.get("requests", 0), 1)
cpu_ms = (after - before) * 1000.0 / hz
client = 'HTTP/1.1 keep-alive' if mode == 'h1' else 'HTTP/2'
offers = 'http/1.1' if o == 'h1' else 'h2, http/1.1'
leg = 'h2' if (mode == 'h2' and o == 'h2') else 'http/1.1'
print(f"| {r} | {client} | {offers} | {leg} | {out.get('rps', 0):.0f} | {out.get('errors', 'n/a')} | {cpu_ms / n:.3f} |")
PY
    done
  done
done
echo
echo "concurrency $concurrency ($concurrency keep-alive tunnels for HTTP/1.1; $concurrency streams on one tunnel for HTTP/2), $seconds s per run, $(nproc) cores"
