/**
 * Sluice's certificates: the local CA ({@link dev.sluice.certs.LocalCa}), per-host leaf certificates
 * for interception ({@link dev.sluice.certs.LeafIssuer}, {@link dev.sluice.certs.LeafCache}), SPKI pins
 * ({@link dev.sluice.certs.SpkiPin}, {@link dev.sluice.certs.PinStore}), upstream validation with pins
 * ({@link dev.sluice.certs.UpstreamTrust}, {@link dev.sluice.certs.PinVerifier},
 * {@link dev.sluice.certs.PinningTrustManager}) and CA/bundle export ({@link dev.sluice.certs.CaExport}).
 *
 * <p>No Netty here, no global state: Bouncy Castle builds ASN.1 structures; keys, signatures and
 * certificate objects come from the JDK's own providers, and no security provider is registered.
 * See docs/certs.md.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.certs;

import org.jspecify.annotations.NullMarked;
