/**
 * The DNS responder for transparent sandboxes (UDP and TCP).
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.dns;

import org.jspecify.annotations.NullMarked;
