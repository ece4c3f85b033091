package dev.sluice.rules.policy;

import java.net.URI;
import java.util.Objects;

/**
 * The policy's {@code alerts} section.
 *
 * @param webhook {@code alerts.webhook}: an {@code http://} or {@code https://} URL that receives alerts
 *                as batched JSON POSTs
 */
public record AlertSettings(URI webhook) {

    public AlertSettings {
        Objects.requireNonNull(webhook, "webhook");
    }
}
