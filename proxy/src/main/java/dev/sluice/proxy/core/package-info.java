/**
 * {@code ProxyContext} and its parts shared by every phase: the policy holder, byte counters, connection limits, draining, source identity.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.core;

import org.jspecify.annotations.NullMarked;
