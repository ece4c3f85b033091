#!/usr/bin/env bash
# Smoke test of the built jar, driven by real signals:
#  1. the README's first command starts (embedded default policy) and denies a non-LLM host; the README's
#     client example (eval "$(sluice env ...)", curl without -x) goes through it; SIGTERM logs a shutdown line;
#  2. with a policy file: a denial is audited; SIGHUP reloads the file (the next decision changes);
#  3. SIGTERM during a 50 MiB CONNECT download lets it finish and its audit line is written;
#  4. `sluice audit verify` passes on the resulting log.
# Needs: the jars built (mvn package), curl. Uses free loopback ports only.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
data=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$data"; }
trap cleanup EXIT
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
    || echo $((20000 + RANDOM % 20000))
}
wait_port() {
  for _ in $(seq 1 150); do
    if curl -s -o /dev/null "http://127.0.0.1:$1/" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "smoke: nothing listens on $1" >&2; return 1
}

# 1. The README's first command, as is (127.0.0.1:3128, admin 127.0.0.1:9901), in its own data dir.
(mkdir -p "$data/readme" && cd "$data/readme" && exec "$repo/sluice" run) 2>"$data/readme.log" &
readme=$!
pids+=($readme)
wait_port 3128
status=$(curl -s -o /dev/null -w '%{http_code}' -x http://127.0.0.1:3128 http://example.invalid/ || true)
echo "smoke: README command: a non-LLM host answered $status"
[ "$status" = "403" ] || { echo "smoke: expected 403" >&2; cat "$data/readme.log" >&2; exit 1; }
# The README's client example: `eval "$(sluice env ...)"` in the same directory, then plain curl with
# no -x: its request goes through Sluice (the audit line shows it), and env named the proxy's own CA.
env_out=$(cd "$data/readme" && "$repo/sluice" env --extension default 2>"$data/env.err")
if grep -v '^WARNING: Using incubator modules' "$data/env.err" | grep -q .; then
  echo "smoke: sluice env warned:" >&2; cat "$data/env.err" >&2; exit 1
fi
grep -q "^export http_proxy='http://127.0.0.1:3128'" <<<"$env_out" || { echo "smoke: no lower-case http_proxy" >&2; exit 1; }
grep -q "^# CA certificate: $data/readme/sluice-data/ca.crt.pem " <<<"$env_out" \
  || { echo "smoke: sluice env names another CA:" >&2; echo "$env_out" >&2; exit 1; }
status=$(cd "$data/readme" && eval "$env_out" && curl -s -o /dev/null -w '%{http_code}' http://readme-example.invalid/ || true)
[ "$status" = "403" ] || { echo "smoke: README example: expected 403 through Sluice, got $status" >&2; exit 1; }
for _ in $(seq 1 50); do grep -q '"server.address":"readme-example.invalid"' "$data/readme/sluice-data/audit.jsonl" && break; sleep 0.1; done
grep '"server.address":"readme-example.invalid"' "$data/readme/sluice-data/audit.jsonl" \
  || { echo "smoke: README example: curl's request has no audit line" >&2; exit 1; }
echo "smoke: README example (eval sluice env; curl without -x) went through Sluice: ok"
kill -TERM $readme; wait $readme || true
# Data at rest is private: the data dir rwx------, the audit log rw-------, the CA key rw-------.
modes="$(stat -c %a "$data/readme/sluice-data") $(stat -c %a "$data/readme/sluice-data/audit.jsonl") $(stat -c %a "$data/readme/sluice-data/ca.key.pem")"
echo "smoke: data dir, audit log and CA key modes: $modes"
[ "$modes" = "700 600 600" ] || { echo "smoke: expected modes 700 600 600" >&2; ls -la "$data/readme/sluice-data" >&2; exit 1; }
grep -q "^sluice: stopped; audit log " "$data/readme.log" || { echo "smoke: no shutdown line" >&2; cat "$data/readme.log" >&2; exit 1; }

# 2. A policy file, a denial, then SIGHUP.
port=$(free_port); origin_port=$(free_port)
write_policy() {
  cat > "$data/policy.yaml.tmp" <<YAML
version: 1
extensions:
  default:
    allow:
      - host: origin.test
        ports: [$origin_port]
      - cidr: 127.0.0.1/32
        ports: [$origin_port]
$1
network:
  allow_private: ["127.0.0.1/32"]
  hosts:
    origin.test: 127.0.0.1
    later.test: 127.0.0.1
listen:
  proxy: 127.0.0.1:$port
  admin: 127.0.0.1:0
YAML
  mv "$data/policy.yaml.tmp" "$data/policy.yaml"
}
write_policy ""
java -cp benchmarks/target/benchmarks.jar dev.sluice.benchmarks.LoopbackOrigin bulk "$origin_port" $((50 * 1024 * 1024)) \
  2>/dev/null &
pids+=($!)
./sluice run --policy "$data/policy.yaml" --data-dir "$data" 2>"$data/sluice.log" &
pid=$!
pids+=($pid)
wait_port "$port"
status=$(curl -s -o "$data/body" -w '%{http_code}' -x "http://127.0.0.1:$port" "http://later.test:$origin_port/" || true)
echo "smoke: denied host answered $status: $(cat "$data/body")"
[ "$status" = "403" ] || { echo "smoke: expected 403" >&2; cat "$data/sluice.log" >&2; exit 1; }

write_policy "      - host: later.test
        ports: [$origin_port]"
kill -HUP $pid
for _ in $(seq 1 50); do
  status=$(curl -s -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$port" "http://later.test:$origin_port/" || true)
  [ "$status" != "403" ] && break
  sleep 0.1
done
# The origin is not HTTP: an allowed request reaches it and gets a 502, not a 403.
echo "smoke: after SIGHUP the same request answered $status"
[ "$status" = "502" ] || { echo "smoke: the reload did not take effect" >&2; cat "$data/sluice.log" >&2; exit 1; }

# 3. SIGTERM during a 50 MiB download through a CONNECT tunnel.
java -cp benchmarks/target/benchmarks.jar dev.sluice.benchmarks.BulkDownload "$origin_port" "$port" --throttle \
  > "$data/bulk.out" &
client=$!
sleep 0.5
kill -TERM $pid
wait $client
wait $pid || true
cat "$data/bulk.out"
grep -q "bytes=52428800 " "$data/bulk.out" || { echo "smoke: the transfer was cut by SIGTERM" >&2; exit 1; }
grep -q '"bytes.received":52428800' "$data/audit.jsonl" \
  || { echo "smoke: no audit line for the transfer" >&2; tail -3 "$data/audit.jsonl" >&2; exit 1; }
grep -q '"reason":"not_allowlisted"' "$data/audit.jsonl" || { echo "smoke: no audit line for the denial" >&2; exit 1; }
echo "smoke: SIGTERM let the transfer finish and its audit line was written: ok"

# 4. The audit chain.
./sluice audit verify --data-dir "$data" || { echo "smoke: audit verify failed" >&2; exit 1; }
