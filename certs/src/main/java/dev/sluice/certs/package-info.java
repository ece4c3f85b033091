/**
 * Sluice's certificates: the local CA ({@link dev.sluice.certs.LocalCa}), per-host leaf certificates
 * for interception ({@link dev.sluice.certs.LeafIssuer}, {@link dev.sluice.certs.LeafCache}), SPKI pins
 * ({@link dev.sluice.certs.SpkiPin}, {@link dev.sluice.certs.PinStore}), upstream validation with pins
 * ({@link dev.sluice.certs.UpstreamTrust}, {@link dev.sluice.certs.PinVerifier},
 * {@link dev.sluice.certs.PinningTrustManager}) and CA/bundle export ({@link dev.sluice.certs.CaExport}).
 *
 * <p>No Netty here, no global state: Bouncy Castle builds ASN.1 structures; keys, signatures and
 * certificate objects come from the JDK's own providers, and no security provider is registered.
 * Everything is non-null unless documented otherwise. See docs/certs.md.
 */
package dev.sluice.certs;
