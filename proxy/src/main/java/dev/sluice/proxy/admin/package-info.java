/**
 * The admin listener: {@code /metrics}, {@code /healthz}, {@code /readyz}, {@code /policy}, {@code /approvals} behind {@code AdminToken}.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.admin;

import org.jspecify.annotations.NullMarked;
