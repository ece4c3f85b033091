#!/usr/bin/env bash
# Fuzzes every Jazzer target for a bounded time (30 s each: the @FuzzTest maxDuration), one target per
# JVM as Jazzer requires. `mvn -B verify` already runs each target in regression mode over its committed
# seed corpus (src/test/resources/.../<Class>Inputs/<method>/); this script is the fuzzing mode.
#
#   scripts/fuzz.sh            every target (about 9 x 45 s)
#   scripts/fuzz.sh Redactor   only the targets whose name contains "Redactor"
#
# A crash is saved by Jazzer as crash-<sha1> in that target's Inputs directory, so the next
# `mvn verify` replays it as a regression test: commit it with the fix. Exit status 1 when any target
# found a crash. The generated corpus (.cifuzz-corpus/ in each module) is not committed.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(
  rules:dev.sluice.rules.fuzz.TargetParserFuzzTest#parseAuthority
  rules:dev.sluice.rules.fuzz.TargetParserFuzzTest#parseAbsoluteForm
  rules:dev.sluice.rules.fuzz.PolicyLoaderFuzzTest#parse
  rules:dev.sluice.rules.fuzz.RedactorFuzzTest#chunkedEqualsWhole
  rules:dev.sluice.rules.fuzz.RedactorFuzzTest#jsonEqualsPlain
  proxy:dev.sluice.proxy.fuzz.ClientHelloParserFuzzTest#parse
  proxy:dev.sluice.proxy.dns.DnsQueryFuzzTest#udp
  proxy:dev.sluice.proxy.dns.DnsQueryFuzzTest#tcp
  proxy:dev.sluice.proxy.fuzz.HttpFrontFuzzTest#front
)
filter="${1:-}"

mvn -B -q -pl proxy -am test-compile
failed=()
for target in "${targets[@]}"; do
  module="${target%%:*}"
  test="${target#*:}"
  if [ -n "$filter" ] && [[ "$test" != *"$filter"* ]]; then
    continue
  fi
  echo "== fuzzing $test for 30 s"
  # -am: the module's own dependencies (hosts, rules, certs) come from the reactor, not from a local
  # repository a fresh clone does not have.
  if ! JAZZER_FUZZ=1 mvn -B -q -pl "$module" -am test -Dtest="$test" \
      -Dsurefire.failIfNoSpecifiedTests=false -Dsurefire.extraArgLine=-Xmx768m; then
    failed+=("$test")
    echo "!! $test: a finding (see $module/target/surefire-reports and the crash-* file in its Inputs directory)"
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzzing found problems in: ${failed[*]}"
  exit 1
fi
echo "fuzzing: no finding"
