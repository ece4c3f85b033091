/**
 * Metric names and meters ({@code SluiceMetrics}, {@code MetricNames}).
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.metrics;

import org.jspecify.annotations.NullMarked;
