package dev.sluice.proxy.metrics;

import io.micrometer.core.instrument.Counter;

/**
 * The two byte counters of one (extension, destination) pair, looked up once per exchange so that
 * counting a buffer is a single add.
 *
 * @param egress bytes toward the internet
 * @param ingress bytes back from the internet
 */
public record TrafficMeter(Counter egress, Counter ingress) {
}
