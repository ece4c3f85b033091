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
 */
public record RedactionSettings(RedactionAction action, List<String> builtinIds, List<Detector> custom,
                                DetectorSet detectors) {

    public RedactionSettings {
        Objects.requireNonNull(action, "action");
        builtinIds = List.copyOf(builtinIds);
        custom = List.copyOf(custom);
        Objects.requireNonNull(detectors, "detectors");
    }

    /** Builds the settings and their detector set. */
    public static RedactionSettings of(RedactionAction action, List<String> builtinIds, List<Detector> custom) {
        List<Detector> all = new ArrayList<>();
        for (String id : builtinIds) {
            all.add(BuiltinDetectors.byId(id)
                    .orElseThrow(() -> new IllegalArgumentException("builtin: " + id + " (expected: a built-in detector id)")));
        }
        all.addAll(custom);
        return new RedactionSettings(action, builtinIds, custom, DetectorSet.of(all));
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
