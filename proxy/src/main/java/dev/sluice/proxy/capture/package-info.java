/**
 * Prompt capture for review (policy {@code capture}): the exchange as sent — the request body after
 * redaction and before credential injection, the response with SSE reassembled — kept as one private
 * file per audit event id under the data dir ({@code CaptureStore}, {@code Capture}, {@code CapturedBody},
 * {@code ServerSentEvents}); read back by {@code sluice audit show} and {@code audit tail --captured}.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.capture;

import org.jspecify.annotations.NullMarked;
