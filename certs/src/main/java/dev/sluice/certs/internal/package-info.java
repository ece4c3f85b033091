/**
 * Helpers of the certs module; not API, may change without notice: canonical host checks, RFC 9525
 * hostname matching, PEM, atomic file writes, the pin record JSON shape.
 */
package dev.sluice.certs.internal;
