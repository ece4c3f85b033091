package dev.sluice.rules.redflag;

/** What a red-flag match does ({@code red_flags.action}). */
public enum RedFlagAction {
    /** Recorded in the audit record ({@code red_flags}) and counted ({@code sluice_red_flags_total}). */
    LOG,
    /** As {@link #LOG}; meant for an alert rule on the metric (the webhook is not built yet). */
    ALERT,
    /** As {@link #LOG}, and a request is refused with 403 {@code red_flag}. */
    BLOCK
}
