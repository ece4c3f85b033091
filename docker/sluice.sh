#!/bin/sh
# `sluice` inside the image: the shaded jar with the vector keyword scan (as ./sluice does), so that
# `docker exec <container> sluice env --extension NAME` and `sluice audit verify` work; the data dir
# and policy come from SLUICE_DATA_DIR and SLUICE_POLICY (set by the image). Netty's native libraries
# load from /opt/sluice/native (the root is read-only and /tmp is noexec); no perf data file in /tmp.
# Extra JVM options: SLUICE_JAVA_OPTS.
# shellcheck disable=SC2086
exec java -XX:+ExitOnOutOfMemoryError -XX:-UsePerfData -Djava.library.path=/opt/sluice/native \
  --add-modules jdk.incubator.vector ${SLUICE_JAVA_OPTS:-} -jar /opt/sluice/sluice.jar "$@"
