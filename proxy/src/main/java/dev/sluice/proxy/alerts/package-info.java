/**
 * The alert webhook ({@code AlertWebhook}) and the audit sink that feeds it ({@code AlertingAuditSink}).
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.alerts;

import org.jspecify.annotations.NullMarked;
