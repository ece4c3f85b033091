#!/bin/sh
# Recall per slice and false-positive rate of the built-in detectors on the labelled corpus of
# RedactionCorpus (seed fixed, fake secrets made at run time). Builds the benchmarks jar if missing.
# Usage: benchmarks/scripts/redaction-corpus.sh [--misses]
set -e
cd "$(dirname "$0")/../.."
JAR=benchmarks/target/benchmarks.jar
if [ ! -f "$JAR" ]; then
  mvn -q -B -DskipTests package -pl benchmarks -am
fi
exec java --add-modules jdk.incubator.vector -cp "$JAR" dev.sluice.benchmarks.RedactionCorpus "$@" 2>&1 | grep -v '^WARNING: Using incubator modules'
