/**
 * Plain HTTP forwarding and the upstream leg of intercepted requests: {@code HttpForwarder} and the classes it owns.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.forward;

import org.jspecify.annotations.NullMarked;
