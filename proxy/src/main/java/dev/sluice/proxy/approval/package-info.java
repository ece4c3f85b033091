/**
 * The approvals backend a held request waits on ({@code Approvals}).
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.approval;

import org.jspecify.annotations.NullMarked;
