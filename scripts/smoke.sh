#!/usr/bin/env bash
# Smoke test of the README's first command: starts the shaded jar on the embedded default policy,
# checks that a non-LLM host is denied with 403 and audited, then stops Sluice with SIGTERM and checks
# that the audit line was flushed and its hash chain verifies. Needs: the jar built (mvn package), curl. Uses free ports only.
set -euo pipefail
cd "$(dirname "$0")/.."
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
  || echo 39128)
cat > "$data/policy.yaml" <<YAML
version: 1
extensions:
  default:
    allow:
      - host: api.anthropic.com
        ports: [443]
listen:
  proxy: 127.0.0.1:$port
  admin: 127.0.0.1:0
YAML
./sluice run --policy "$data/policy.yaml" --data-dir "$data" 2>"$data/sluice.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$data"' EXIT
for _ in $(seq 1 100); do
  if curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null; then break; fi
  sleep 0.1
done
status=$(curl -s -o "$data/body" -w '%{http_code}' -x "http://127.0.0.1:$port" http://example.invalid/ || true)
body=$(cat "$data/body")
echo "smoke: denied host answered $status: $body"
[ "$status" = "403" ] || { echo "smoke: expected 403" >&2; cat "$data/sluice.log" >&2; exit 1; }
kill -TERM $pid
wait $pid || true
grep -q '"reason":"not_allowlisted"' "$data/audit.jsonl" || { echo "smoke: no audit line" >&2; exit 1; }
echo "smoke: audit line flushed on SIGTERM: ok"
./sluice audit verify --data-dir "$data" || { echo "smoke: audit verify failed" >&2; exit 1; }
