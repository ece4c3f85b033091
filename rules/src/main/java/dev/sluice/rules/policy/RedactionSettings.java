package dev.sluice.rules.policy;

import dev.sluice.rules.redact.BuiltinDetectors;
import dev.sluice.rules.redact.Detector;
import dev.sluice.rules.redact.DetectorSet;
import dev.sluice.rules.redact.RedactionAction;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The {@code redaction} section: what to do with credentials found in bodies sent to inspected hosts,
 * and which detectors look for them.
 *
 * @param action redact (default), block or report
 * @param builtinIds the built-in detectors in force, by id, in priority order (all by default)
 * @param custom detectors defined in the policy, after the built-ins in priority
 * @param detectors the compiled set of both, ready to start redactors
 * @param binary what a finding in a binary body does ({@code redaction.binary}): {@link RedactionAction#BLOCK}
 *               (the default: 403 {@code credential_detected}) or {@link RedactionAction#REPORT}; a binary
 *               body is never rewritten, see {@link dev.sluice.rules.redact.BodyPlan}
 */
public record RedactionSettings(RedactionAction action, List<String> builtinIds, List<Detector> custom,
                                DetectorSet detectors, RedactionAction binary) {

    public RedactionSettings {
        Objects.requireNonNull(action, "action");
        Objects.requireNonNull(binary, "binary");
        if (binary == RedactionAction.REDACT) {
            throw new IllegalArgumentException("binary: redact (expected: block or report)");
        }
        builtinIds = List.copyOf(builtinIds);
        custom = List.copyOf(custom);
        Objects.requireNonNull(detectors, "detectors");
    }

    /** The same settings with {@code binary: block} (for callers that predate it). */
    public RedactionSettings(RedactionAction action, List<String> builtinIds, List<Detector> custom,
                             DetectorSet detectors) {
        this(action, builtinIds, custom, detectors, RedactionAction.BLOCK);
    }

    /** Builds the settings and their detector set, with {@code binary: block}. */
    public static RedactionSettings of(RedactionAction action, List<String> builtinIds, List<Detector> custom) {
        return of(action, RedactionAction.BLOCK, builtinIds, custom);
    }

    /**
     * Builds the settings and their detector set (the set compiled for the same detectors earlier when
     * there is one, {@link DetectorSet#compiled}).
     *
     * @param binary {@link RedactionAction#BLOCK} or {@link RedactionAction#REPORT}
     * @throws IllegalArgumentException for an unknown built-in id or {@code binary} REDACT
     */
    public static RedactionSettings of(RedactionAction action, RedactionAction binary, List<String> builtinIds,
                                       List<Detector> custom) {
        List<Detector> all = new ArrayList<>();
        for (String id : builtinIds) {
            all.add(BuiltinDetectors.byId(id)
                    .orElseThrow(() -> new IllegalArgumentException("builtin: " + id + " (expected: a built-in detector id)")));
        }
        all.addAll(custom);
        return new RedactionSettings(action, builtinIds, custom, DetectorSet.compiled(all), binary);
    }

    /** Returns the default: redact, with every built-in detector and no custom one. */
    public static RedactionSettings defaults() {
        return Defaults.INSTANCE;
    }

    /** Holder: the default set is compiled once, on first use. */
    private static final class Defaults {
        static final RedactionSettings INSTANCE = of(RedactionAction.REDACT,
                BuiltinDetectors.all().stream().map(Detector::id).toList(), List.of());
    }
}
