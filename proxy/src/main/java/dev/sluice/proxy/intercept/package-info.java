/**
 * Interception of inspected hosts: TLS termination, the phases inside a tunnel (redaction, credentials, LLM, red flags) and HTTP/2.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.intercept;

import org.jspecify.annotations.NullMarked;
