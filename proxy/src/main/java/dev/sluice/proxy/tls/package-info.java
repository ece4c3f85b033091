/**
 * TLS material: interception and upstream contexts, the ClientHello parser, resumable trust.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.tls;

import org.jspecify.annotations.NullMarked;
