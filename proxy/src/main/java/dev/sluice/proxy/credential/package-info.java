/**
 * Credential injection's values: the placeholder key and the per-snapshot {@code CredentialVault} (docs/credentials.md).
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.credential;

import org.jspecify.annotations.NullMarked;
