package dev.sluice.rules.credential;

import dev.sluice.rules.policy.Credential;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Every placeholder a policy hands out: for each extension and each credential it lists under
 * {@code credentials}, the placeholder {@link Placeholders} derives. Built once per policy snapshot.
 */
public final class PlaceholderTable {

    /** One placeholder's owner: the extension that holds it and the credential it stands for. */
    public record Grant(String extension, Credential credential, String placeholder) {
        @Override
        public String toString() {
            return "Grant[" + extension + ", " + credential.name() + "]";
        }
    }

    private final Map<String, Grant> byPlaceholder;
    private final Map<String, Map<String, Grant>> byExtension;

    private PlaceholderTable(Map<String, Grant> byPlaceholder, Map<String, Map<String, Grant>> byExtension) {
        this.byPlaceholder = byPlaceholder;
        this.byExtension = byExtension;
    }

    /** Returns the table of {@code policy}'s grants under {@code placeholders}. */
    public static PlaceholderTable of(Policy policy, Placeholders placeholders) {
        Map<String, Grant> all = new LinkedHashMap<>();
        Map<String, Map<String, Grant>> perExtension = new LinkedHashMap<>();
        for (Extension e : policy.extensions().values()) {
            Map<String, Grant> own = new LinkedHashMap<>();
            for (String name : e.credentials()) {
                Credential c = policy.credentials().get(name);
                if (c == null) {
                    continue; // the loader refuses this; a hand-built policy just grants nothing
                }
                Grant g = new Grant(e.name(), c, placeholders.placeholder(e.name(), name));
                all.put(g.placeholder(), g);
                own.put(name, g);
            }
            perExtension.put(e.name(), Map.copyOf(own));
        }
        return new PlaceholderTable(Map.copyOf(all), Map.copyOf(perExtension));
    }

    /** Returns the grant of {@code placeholder} (exact, lower-case hex), if the policy hands it out. */
    public Optional<Grant> lookup(String placeholder) {
        return Optional.ofNullable(byPlaceholder.get(placeholder));
    }

    /** Returns {@code extension}'s grants by credential name, in the order listed; empty when none. */
    public Map<String, Grant> grants(@Nullable String extension) {
        Map<String, Grant> own = extension == null ? null : byExtension.get(extension);
        return own == null ? Map.of() : own;
    }

    /** Returns whether no extension holds any credential. */
    public boolean isEmpty() {
        return byPlaceholder.isEmpty();
    }
}
