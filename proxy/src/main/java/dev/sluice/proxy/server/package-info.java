/**
 * The composition root: {@code SluiceServer} (event loops, listeners, graceful shutdown) and {@code PolicyReloader}.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.server;

import org.jspecify.annotations.NullMarked;
