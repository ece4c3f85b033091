/**
 * HTTP pipeline assembly ({@code HttpPipeline}), the strict decoder, the header deadline, hop-by-hop stripping and Sluice's own answers.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.http;

import org.jspecify.annotations.NullMarked;
