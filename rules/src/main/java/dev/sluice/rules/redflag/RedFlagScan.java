package dev.sluice.rules.redflag;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The red-flag scan of one body (a request's, or a response's), fed decoded text piece by piece (the
 * string values of a JSON body, or of the events of a stream, in order). Each piece is read together
 * with the last {@value #CARRY} characters before it, so a match split across pieces (across SSE events)
 * is found; memory stays at that carry whatever the body's length. A rule is reported at most once per
 * body. Not thread-safe.
 *
 * <p>{@code internal_reference} in a response flags only references the request did not contain: the
 * request's scan collects them ({@link #references()}) and the response's scan is given them.
 */
public final class RedFlagScan {

    /** Characters of earlier text read again with each new piece. */
    public static final int CARRY = 256;
    /** Characters gathered before a scan runs. */
    public static final int BATCH = 8192;
    /** Most references a request scan keeps for its response. */
    private static final int MAX_REFERENCES = 256;

    private final List<RedFlagRule> rules;
    private final RedFlagDetector referenceCollector;
    private final Set<String> requestReferences;
    private final Set<String> collected = new LinkedHashSet<>();
    private final Set<String> flagged = new LinkedHashSet<>();
    private final String separator;
    /** The carry (the last {@value #CARRY} characters scanned) followed by what is pending. */
    private final StringBuilder buf = new StringBuilder();
    private int carried;
    private final LiteralGate gate;
    private final boolean gated;

    /**
     * @param rules the rules that run on this body
     * @param referenceCollector for a request: the {@code internal_reference} detector whose matches are
     *                           kept for the response; null otherwise
     * @param requestReferences for a response: what the request's scan collected (lowercase); empty otherwise
     * @param separator what joins two pieces ({@code "\n"} between a request's string values, {@code ""}
     *                  between the text deltas of a stream)
     */
    public RedFlagScan(List<RedFlagRule> rules, RedFlagDetector referenceCollector, Set<String> requestReferences,
                       String separator) {
        this.rules = List.copyOf(rules);
        this.referenceCollector = referenceCollector;
        this.requestReferences = Set.copyOf(requestReferences);
        this.separator = separator;
        this.gated = true;
        this.gate = new LiteralGate(this.rules, referenceCollector);
    }

    /** For tests: {@code gated == false} runs every detector on every batch (the unfiltered reference). */
    RedFlagScan(List<RedFlagRule> rules, RedFlagDetector referenceCollector, Set<String> requestReferences,
                String separator, boolean gated) {
        this.rules = List.copyOf(rules);
        this.referenceCollector = referenceCollector;
        this.requestReferences = Set.copyOf(requestReferences);
        this.separator = separator;
        this.gated = gated;
        this.gate = new LiteralGate(this.rules, referenceCollector);
    }

    /** Answers whether this scan has anything to do. */
    public boolean active() {
        return !rules.isEmpty() || referenceCollector != null;
    }

    /**
     * Reads one piece of decoded text. Pieces are gathered and scanned {@value #BATCH} characters at a
     * time (so the carry is read again once per batch, not once per piece); returns the rules a scan
     * triggered by this piece flagged for the first time (in rule order), empty when none. Call
     * {@link #flush()} at the end of each network chunk so that what was gathered is scanned then.
     */
    public List<RedFlagRule> feed(@Nullable String piece) {
        if (piece == null || piece.isEmpty()) {
            return List.of();
        }
        if (buf.length() > 0) {
            buf.append(separator);
        }
        buf.append(piece);
        return buf.length() - carried >= BATCH ? flush() : List.of();
    }

    /** Scans what was gathered; returns the rules it flagged for the first time, empty when none. */
    public List<RedFlagRule> flush() {
        if (buf.length() == carried) {
            return List.of();
        }
        // one pass over the batch for every rule's literals; a rule whose gate stays shut cannot match,
        // and one whose gate opened reads only the text around its literals
        Gated.Hits[] open = gated ? gate.scan(buf) : null;
        window = null;
        List<RedFlagRule> fresh = List.of();
        for (int i = 0; i < rules.size(); i++) {
            RedFlagRule rule = rules.get(i);
            if (flagged.contains(rule.id()) || (open != null && open[i] == null)) {
                continue;
            }
            if (rule.flaggedBy(find(rule.detector(), open == null ? null : open[i]), requestReferences)) {
                flagged.add(rule.id());
                if (fresh.isEmpty()) {
                    fresh = new ArrayList<>();
                }
                fresh.add(rule);
            }
        }
        if (referenceCollector != null && collected.size() < MAX_REFERENCES
                && (open == null || open[rules.size()] != null)) {
            for (String ref : find(referenceCollector, open == null ? null : open[rules.size()])) {
                if (collected.size() < MAX_REFERENCES) {
                    collected.add(ref);
                }
            }
        }
        window = null;
        lower = null;
        if (buf.length() > CARRY) {
            buf.delete(0, buf.length() - CARRY);
        }
        carried = buf.length();
        return fresh;
    }

    /** The batch as a String and lowercased, made only for a detector without a gate (within one flush). */
    private String window;
    private String lower;

    private List<String> find(RedFlagDetector detector, Gated.@Nullable Hits hits) {
        if (hits != null && hits != LiteralGate.ALWAYS && detector instanceof Gated g) {
            return g.findAt(buf, hits);
        }
        if (window == null) {
            window = buf.toString();
            lower = window.toLowerCase(java.util.Locale.ROOT);
        }
        return detector.find(window, lower);
    }


    /** Returns the ids flagged so far, in the order found. */
    public Set<String> flagged() {
        return Set.copyOf(flagged);
    }

    /** Returns the internal references the request held (for its response's scan); call after {@link #flush()}. */
    public Set<String> references() {
        return Set.copyOf(collected);
    }
}
