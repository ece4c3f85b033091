package dev.sluice.rules.policy;

/** Policy mode: {@code enforce} denies rule misses; {@code report} logs them as would_deny and lets them through. */
public enum Mode {
    ENFORCE, REPORT
}
