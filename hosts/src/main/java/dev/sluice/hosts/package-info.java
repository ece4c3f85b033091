/**
 * The canonical host and IP-literal forms shared by {@code rules} and {@code certs}.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.hosts;

import org.jspecify.annotations.NullMarked;
