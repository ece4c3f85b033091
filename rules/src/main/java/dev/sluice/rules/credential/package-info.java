/**
 * Credential injection decisions: placeholders, their table, the rewrite of a request that carries them, blind tunnels.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.rules.credential;

import org.jspecify.annotations.NullMarked;
