/**
 * The transparent listener: first bytes, SNI/Host routing, original destination, its tunnel phase (docs/transparent.md).
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.transparent;

import org.jspecify.annotations.NullMarked;
