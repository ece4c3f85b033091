/**
 * The audit record ({@code AuditEvent}, {@code AuditRecord}, typed {@code Listener}, {@code TlsMode}, {@code Outcome}), the hash-chained writer, reader, verifier and export (docs/audit.md).
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.audit;

import org.jspecify.annotations.NullMarked;
