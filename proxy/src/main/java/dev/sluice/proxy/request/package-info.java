/**
 * The request phase: identify, canonicalise, decide ({@code ExplicitRequestHandler}, its fronts, admission, refusals and approval holds).
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.request;

import org.jspecify.annotations.NullMarked;
