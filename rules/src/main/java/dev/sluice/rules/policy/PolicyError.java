package dev.sluice.rules.policy;

/**
 * One problem found while loading a policy, located in its file.
 *
 * @param source file path (or embedded resource name)
 * @param line 1-based line, 0 when unknown
 * @param column 1-based column, 0 when unknown
 * @param message short description, e.g. {@code unknown key "alow" (expected one of: allow, deny, ...)}
 */
public record PolicyError(String source, int line, int column, String message) {
    @Override
    public String toString() {
        return source + ":" + line + ":" + column + ": " + message;
    }
}
