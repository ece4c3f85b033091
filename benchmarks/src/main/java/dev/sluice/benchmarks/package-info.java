/**
 * Benchmarks and load tools: JMH benchmarks of the redactor, red flags, decisions, credentials, leaf
 * issuance and upstream handshakes; loopback origins and load clients ({@code LoadRunner},
 * {@code NettyTlsLoad}, {@code SseLoad}, {@code BulkDownload}, {@code IdleTunnels}); the launchers the
 * side-by-side harness ({@code benchmarks/harness/}) starts; the labelled redaction corpus.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.benchmarks;

import org.jspecify.annotations.NullMarked;
