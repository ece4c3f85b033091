/**
 * Address classes of resolved answers (loopback, private, metadata, ...) and CIDR ranges.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.rules.address;

import org.jspecify.annotations.NullMarked;
