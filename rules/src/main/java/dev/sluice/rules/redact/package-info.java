/**
 * Credential detection and redaction of bodies and headers: detectors, the keyword prefilter, the streaming redactor.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.rules.redact;

import org.jspecify.annotations.NullMarked;
