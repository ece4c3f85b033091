/**
 * Safe dialing ({@code UpstreamDialer}): every answer checked by {@code Decider.checkAddresses}, the parent proxy leg.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.dial;

import org.jspecify.annotations.NullMarked;
