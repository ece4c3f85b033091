package dev.sluice.rules.redflag;

import java.util.List;

/**
 * One red-flag detector: a pure function from decoded text (a JSON string value, or the text of
 * several SSE events joined) to what it found there. Thread-safe; holds no state between calls.
 */
public interface RedFlagDetector {

    /** The rule id ({@code credential_path}, or a custom id). */
    String id();

    /**
     * Returns the matches in {@code text}, in order, each as the matched text (at most a few hundred
     * characters); empty when there is none. Never null.
     */
    List<String> find(CharSequence text);

    /**
     * As {@link #find(CharSequence)}, given also {@code lower}, the same text in lower case
     * ({@code toLowerCase(Locale.ROOT)}), for a cheap literal prefilter; the scan lowercases each batch once.
     */
    default List<String> find(CharSequence text, String lower) {
        return find(text);
    }
}
