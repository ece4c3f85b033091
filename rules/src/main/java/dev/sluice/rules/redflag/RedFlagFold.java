package dev.sluice.rules.redflag;

import dev.sluice.rules.redact.KeywordTap;
import dev.sluice.rules.redact.TapKeyword;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.WeakHashMap;
import org.jspecify.annotations.Nullable;

/**
 * Red flags in the redactor's pass: the rules' necessary literals (their {@link Gated} literals, the ones
 * {@link LiteralGate} checks) become {@link TapKeyword}s of the redactor's keyword scan
 * ({@code DetectorSet.withTap}), and at each hit the redactor hands the decoded JSON string around it to a
 * {@link Body}, which runs the detectors of those literals there ({@link Gated#findAt}), as
 * {@link RedFlagScan} does around the literals its gate found. No second decoding of the body, no second
 * pass over it.
 *
 * <p>{@code encoded_shell}'s base64 / hex runs are found through the base64 stems (at the three
 * alignments) and the hex forms of shell words ({@link #SHELL_WORDS}): at such a keyword the run of the
 * base64 alphabet around it is decoded and checked, as the second pass checks every long run.
 *
 * <p>What differs from {@link RedFlagScan} (the second pass, which remains where the redactor does not
 * read the body): the detectors read one JSON string at a time (the separator {@code "\n"} is put at
 * its ends), so a match that spans two string values is not found (no built-in pattern crosses a line
 * but {@code instruction_boundary}'s blank line before a role turn, found when the turn starts its string);
 * a custom rule's pattern reads {@value BuiltinRedFlags#CUSTOM_REACH} characters either side of its
 * keyword, not the whole batch; an encoded command line is found when it holds one of the shell words;
 * the body is read as the redactor reads it (before redaction, and also when it is not valid JSON).
 */
public final class RedFlagFold {

    /**
     * Shell words whose base64 stems and hex forms are keywords of {@code encoded_shell}'s runs: what its
     * decoded-command pattern looks for ({@code curl }, {@code | sh}, {@code bash -c}, {@code /bin/}…), in
     * their most common spelling (a command that pipes into {@code zsh} without a space and holds no
     * download is not found: each stem costs the keyword scan, see benchmarks/RESULTS.md).
     */
    static final List<String> SHELL_WORDS = List.of("curl ", "wget ", "bash -c", "| sh", "| bash", "/bin/", "nc -e",
            "rm -rf", "chmod +x");
    /** Characters either side of a stem in which its base64 / hex run is looked for. */
    static final int RUN_REACH = 1024;
    /** Most references a request keeps for its response (as {@link RedFlagScan}). */
    private static final int MAX_REFERENCES = 256;

    private static final Map<RedFlagSettings, Optional<RedFlagFold>> CACHE =
            Collections.synchronizedMap(new WeakHashMap<>());

    private final List<TapKeyword> keywords;
    /** Per tap keyword: the detectors it is a literal (or a run stem) of, with the literal's length. */
    private final RedFlagDetector[][] owners;
    private final int[][] lengths;
    private final boolean[][] stems;

    private RedFlagFold(List<TapKeyword> keywords, List<List<Object[]>> owners) {
        this.keywords = List.copyOf(keywords);
        int n = keywords.size();
        this.owners = new RedFlagDetector[n][];
        this.lengths = new int[n][];
        this.stems = new boolean[n][];
        for (int k = 0; k < n; k++) {
            List<Object[]> o = owners.get(k);
            this.owners[k] = new RedFlagDetector[o.size()];
            this.lengths[k] = new int[o.size()];
            this.stems[k] = new boolean[o.size()];
            for (int j = 0; j < o.size(); j++) {
                this.owners[k][j] = (RedFlagDetector) o.get(j)[0];
                this.lengths[k][j] = (Integer) o.get(j)[1];
                this.stems[k][j] = (Boolean) o.get(j)[2];
            }
        }
    }

    /**
     * Returns the fold of {@code settings}' rules (built once per settings), or null when one of them
     * cannot be folded: a detector without a literal gate, or a literal that cannot be a keyword (one
     * character, not ASCII, holding a quote or a backslash); such bodies keep the second pass.
     */
    public static @Nullable RedFlagFold of(RedFlagSettings settings) {
        return CACHE.computeIfAbsent(settings, s -> Optional.ofNullable(build(s))).orElse(null);
    }

    private static @Nullable RedFlagFold build(RedFlagSettings settings) {
        Map<String, int[]> reach = new LinkedHashMap<>();
        Map<String, List<Object[]>> owners = new LinkedHashMap<>();
        Set<RedFlagDetector> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (RedFlagRule rule : settings.rules()) {
            RedFlagDetector d = rule.detector();
            if (!seen.add(d)) {
                continue;
            }
            if (!(d instanceof Gated g)) {
                return null;
            }
            String[] literals = g.gateLiterals();
            if (literals.length == 0 && !g.gateOnRuns()) {
                return null;
            }
            for (String l : literals) {
                if (!TapKeyword.allowed(l)) {
                    return null;
                }
                int[] r = g.reach(l);
                add(reach, owners, l, r[0], Math.max(r[1], l.length()), d, l.length(), false);
            }
            if (g.gateOnRuns()) {
                for (String stem : stems()) {
                    add(reach, owners, stem, RUN_REACH, RUN_REACH, d, stem.length(), true);
                }
            }
        }
        List<TapKeyword> keywords = new ArrayList<>();
        List<List<Object[]>> own = new ArrayList<>();
        for (Map.Entry<String, int[]> e : reach.entrySet()) {
            keywords.add(new TapKeyword(e.getKey(), Math.min(TapKeyword.MAX_REACH, e.getValue()[0]),
                    Math.min(TapKeyword.MAX_REACH, e.getValue()[1])));
            own.add(owners.get(e.getKey()));
        }
        return keywords.isEmpty() ? null : new RedFlagFold(keywords, own);
    }

    private static void add(Map<String, int[]> reach, Map<String, List<Object[]>> owners, String keyword, int before,
                            int after, RedFlagDetector d, int length, boolean stem) {
        int[] r = reach.computeIfAbsent(keyword, k -> new int[2]);
        r[0] = Math.max(r[0], before);
        r[1] = Math.max(r[1], after);
        owners.computeIfAbsent(keyword, k -> new ArrayList<>()).add(new Object[] {d, length, stem});
    }

    /** The keywords of {@code encoded_shell}'s runs: base64 stems and hex forms of {@link #SHELL_WORDS}, lowercase. */
    static List<String> stems() {
        Set<String> out = new LinkedHashSet<>();
        for (String w : SHELL_WORDS) {
            for (int a = 0; a < 3; a++) {
                String stem = base64Stem(w, a);
                if (stem.length() >= 3) {
                    out.add(stem.toLowerCase(java.util.Locale.ROOT));
                }
            }
            out.add(HexFormat.of().formatHex(w.getBytes(StandardCharsets.US_ASCII)));
        }
        return new ArrayList<>(out);
    }

    /**
     * The base64 characters fully determined by {@code word} when it begins at a decoded offset of
     * {@code alignment} (0, 1 or 2) modulo 3 (as the redactor's encoded-text detector does).
     */
    static String base64Stem(String word, int alignment) {
        byte[] w = word.getBytes(StandardCharsets.US_ASCII);
        byte[] b = new byte[alignment + w.length];
        System.arraycopy(w, 0, b, alignment, w.length);
        String enc = Base64.getEncoder().withoutPadding().encodeToString(b);
        int from = (8 * alignment + 5) / 6;
        int to = 8 * (alignment + w.length) / 6;
        return enc.substring(from, to);
    }

    /** Returns the keywords to add to the redactor's scan ({@code DetectorSet.withTap}). */
    public List<TapKeyword> keywords() {
        return keywords;
    }

    /**
     * Starts the red flags of one body.
     *
     * @param rules the rules that run on it (those of {@code settings} for its host, path and direction)
     * @param collector for a request: the {@code internal_reference} detector whose matches are kept for
     *                  the response; null otherwise
     * @param requestReferences for a response: what the request held; empty otherwise
     */
    public Body body(List<RedFlagRule> rules, @Nullable RedFlagDetector collector, Set<String> requestReferences) {
        return new Body(this, rules, collector, requestReferences, false);
    }

    /**
     * Starts the red flags of one response's decoded text, read by a plain-text redactor
     * ({@code BodyFormat.PLAIN}): the text values of a JSON body or of a stream's events, escapes undone,
     * joined without a separator (so a match split across events is found). The tap's cheap looks read
     * that text as text (a quote or a line feed is itself, not JSON).
     *
     * @param rules the response rules for the request's host and path
     * @param requestReferences what the request held ({@code internal_reference} flags only the others)
     */
    public Body textBody(List<RedFlagRule> rules, Set<String> requestReferences) {
        return new Body(this, rules, null, requestReferences, true);
    }

    /**
     * The red flags of one body, fed by the redactor ({@link KeywordTap}). A rule is reported at most once
     * per body. Not thread-safe: used on the thread that feeds the redactor.
     */
    public static final class Body implements KeywordTap {
        private final List<RedFlagRule> rules;
        private final RedFlagDetector collector;
        private final Set<String> requestReferences;
        private final boolean[] flaggedSlot;
        private final Set<String> flagged = new LinkedHashSet<>();
        private final Set<String> collected = new LinkedHashSet<>();
        private List<RedFlagRule> fresh = new ArrayList<>();
        /** Per tap keyword: the slots (rule index, or rules.size() for the collector) it opens, lengths, stems. */
        private final int[][] slotsOf;
        private final int[][] lengthsOf;
        private final boolean[][] stemOf;
        /** Per tap keyword and slot entry: the cheap raw precheck ({@link Precheck}). */
        private final int[][] checkOf;
        private final int[] keywordLength;
        private final Gated.Hits[] open;
        /** Whether the redactor reads plain decoded text (else a JSON body's raw bytes). */
        private final boolean plain;

        Body(RedFlagFold fold, List<RedFlagRule> rules, @Nullable RedFlagDetector collector,
             Set<String> requestReferences, boolean plain) {
            this.plain = plain;
            this.rules = List.copyOf(rules);
            this.collector = collector;
            this.requestReferences = Set.copyOf(requestReferences);
            int slots = this.rules.size() + 1;
            this.flaggedSlot = new boolean[slots];
            this.open = new Gated.Hits[slots];
            int n = fold.keywords.size();
            slotsOf = new int[n][];
            lengthsOf = new int[n][];
            stemOf = new boolean[n][];
            checkOf = new int[n][];
            keywordLength = new int[n];
            for (int k = 0; k < n; k++) {
                keywordLength[k] = fold.keywords.get(k).keyword().length();
                List<int[]> s = new ArrayList<>();
                for (int j = 0; j < fold.owners[k].length; j++) {
                    for (int slot = 0; slot < slots; slot++) {
                        RedFlagDetector d = slot < this.rules.size() ? this.rules.get(slot).detector() : collector;
                        if (d == fold.owners[k][j]) {
                            s.add(new int[] {slot, fold.lengths[k][j], fold.stems[k][j] ? 1 : 0});
                        }
                    }
                }
                slotsOf[k] = s.stream().mapToInt(x -> x[0]).toArray();
                lengthsOf[k] = s.stream().mapToInt(x -> x[1]).toArray();
                stemOf[k] = new boolean[s.size()];
                checkOf[k] = new int[s.size()];
                for (int j = 0; j < s.size(); j++) {
                    stemOf[k][j] = s.get(j)[2] == 1;
                    int slot = s.get(j)[0];
                    RedFlagDetector d = slot < this.rules.size() ? this.rules.get(slot).detector() : collector;
                    checkOf[k][j] = stemOf[k][j] || ((Gated) d).custom() ? Precheck.NONE
                            : Precheck.of(d.id(), fold.keywords.get(k).keyword());
                }
            }
        }

        @Override
        public boolean wants(int keyword, byte[] raw, int at, int limit) {
            int[] slots = slotsOf[keyword];
            for (int j = 0; j < slots.length; j++) {
                int slot = slots[j];
                if (flaggedSlot[slot] || (slot == rules.size() && collected.size() >= MAX_REFERENCES)) {
                    continue;
                }
                if (Precheck.mayMatch(checkOf[keyword][j], raw, at, at + keywordLength[keyword], limit, plain)) {
                    return true;
                }
            }
            return false;
        }

        @Override
        public void onString(String text, int[] at, int[] keyword, int count, boolean stringStart, boolean stringEnd) {
            // the second pass joins string values with "\n": a string's ends read as a line's
            String t = stringStart || stringEnd ? (stringStart ? "\n" : "") + text + (stringEnd ? "\n" : "") : text;
            int off = stringStart ? 1 : 0;
            boolean any = false;
            for (int h = 0; h < count; h++) {
                int kw = keyword[h];
                int p = at[h] + off;
                int[] slots = slotsOf[kw];
                for (int j = 0; j < slots.length; j++) {
                    int slot = slots[j];
                    if (flaggedSlot[slot] || (slot == rules.size() && collected.size() >= MAX_REFERENCES)) {
                        continue;
                    }
                    Gated.Hits hits = open[slot];
                    if (hits == null) {
                        hits = open[slot] = new Gated.Hits();
                        any = true;
                    }
                    if (stemOf[kw][j]) {
                        run(hits, t, p);
                    } else if (hits.literalCount > 0 && hits.literals[2 * hits.literalCount - 2] == p) {
                        hits.literals[2 * hits.literalCount - 1] = Math.max(hits.literals[2 * hits.literalCount - 1],
                                lengthsOf[kw][j]);
                    } else {
                        hits.literal(p, lengthsOf[kw][j]);
                    }
                }
            }
            if (!any) {
                return;
            }
            for (int slot = 0; slot < open.length; slot++) {
                Gated.Hits hits = open[slot];
                if (hits == null) {
                    continue;
                }
                open[slot] = null;
                if (hits.literalCount == 0 && hits.runCount == 0) {
                    continue;
                }
                if (slot < rules.size()) {
                    RedFlagRule rule = rules.get(slot);
                    if (rule.flaggedBy(((Gated) rule.detector()).findAt(t, hits), requestReferences)) {
                        flaggedSlot[slot] = true;
                        flagged.add(rule.id());
                        fresh.add(rule);
                    }
                } else {
                    for (String ref : ((Gated) collector).findAt(t, hits)) {
                        if (collected.size() < MAX_REFERENCES) {
                            collected.add(ref);
                        }
                    }
                }
            }
        }

        /**
         * Skips what cannot match: a hit no open rule wants is not decoded. (A rule's hits keep coming
         * until it is flagged; the precheck drops most of the rest.)
         */
        /** Records the base64-alphabet run around {@code p} in {@code t} when it is long enough. */
        private static void run(Gated.Hits hits, String t, int p) {
            int s = p;
            while (s > 0 && b64(t.charAt(s - 1))) {
                s--;
            }
            int e = p;
            while (e < t.length() && b64(t.charAt(e))) {
                e++;
            }
            if (e - s < LiteralGate.MIN_RUN) {
                return;
            }
            for (int r = 0; r < hits.runCount; r++) {
                if (hits.runs[2 * r] == s) {
                    return;
                }
            }
            hits.run(s, e);
        }

        private static boolean b64(char c) {
            return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
        }


        /** Returns the rules flagged since the last call (in the order found), empty when none. */
        public List<RedFlagRule> drain() {
            if (fresh.isEmpty()) {
                return List.of();
            }
            List<RedFlagRule> out = fresh;
            fresh = new ArrayList<>();
            return out;
        }

        /** Returns the ids flagged so far, in the order found. */
        public Set<String> flagged() {
            return Set.copyOf(flagged);
        }

        /** Returns the internal references the body held (for its response's scan). */
        public Set<String> references() {
            return Set.copyOf(collected);
        }
    }

    /**
     * Cheap looks at the raw JSON around a built-in's literal, before anything is decoded: each answers
     * false only where the detector's pattern cannot match there, reading plain bytes; near a backslash
     * (an escape, whose decoded character is not the byte) it answers true. For plain text (a response's
     * decoded text) the bytes are the text: a quote is a quote and a line feed a line feed.
     */
    static final class Precheck {
        static final int NONE = 0;
        /** credential_path at {@code .env}: {@code (?<![\w.])\.env\b}. */
        static final int DOT_ENV = 1;
        /** encoded_shell at curl / wget: {@code \bcurl\b[^\n|]{0,200}\|\s*(sudo\s+)?(ba|z|da)?sh\b}. */
        static final int DOWNLOAD = 2;
        /** internal_reference at 10. / 172. / 192.168.: no digit or dot before, a digit after. */
        static final int ADDRESS = 3;
        /** internal_reference at a domain suffix: a name character before, none after. */
        static final int SUFFIX = 4;
        /** instruction_boundary at human / assistant / system: Capitalised, then {@code \s*:}. */
        static final int ROLE = 5;
        /** instruction_boundary at ignore: white space after. */
        static final int IGNORE = 6;

        private Precheck() {
        }

        static int of(String id, String literal) {
            switch (id) {
                case "credential_path":
                    return literal.equals(".env") ? DOT_ENV : NONE;
                case "encoded_shell":
                    return literal.equals("curl") || literal.equals("wget") ? DOWNLOAD : NONE;
                case "internal_reference":
                    return Character.isDigit(literal.charAt(0)) ? ADDRESS : literal.charAt(0) == '.' ? SUFFIX : NONE;
                case "instruction_boundary":
                    return switch (literal) {
                        case "human", "assistant", "system" -> ROLE;
                        case "ignore" -> IGNORE;
                        default -> NONE;
                    };
                default:
                    return NONE;
            }
        }

        /** Answers whether the pattern behind {@code check} may match at the literal {@code raw[at, end)} of JSON. */
        static boolean mayMatch(int check, byte[] raw, int at, int end, int limit) {
            return mayMatch(check, raw, at, end, limit, false);
        }

        /**
         * Answers whether the pattern behind {@code check} may match at the literal {@code raw[at, end)}: of
         * a JSON body's raw bytes, or with {@code plain} of decoded text.
         */
        static boolean mayMatch(int check, byte[] raw, int at, int end, int limit, boolean plain) {
            if (check == NONE) {
                return true;
            }
            if (end >= limit) {
                return true; // the byte after has not arrived
            }
            int before = check == ROLE || check == IGNORE ? ' ' : plain ? plainBefore(raw, at) : decodedBefore(raw, at);
            if (before < 0) {
                return true; // an escape may end just before the literal
            }
            int after = raw[end];
            if (after == '\\') {
                return true;
            }
            switch (check) {
                case DOT_ENV:
                    return !word(before) && before != '.' && !word(after);
                case ADDRESS:
                    return !(before >= '0' && before <= '9') && before != '.' && after >= '0' && after <= '9';
                case SUFFIX:
                    if (!(alnum(before) || before == '-') || word(after)) {
                        return false;
                    }
                    return !((after == '.' || after == '-') && end + 1 < limit && alnum(raw[end + 1]));
                case ROLE:
                    if (raw[at] < 'A' || raw[at] > 'Z' || !(plain ? plainBlankLineBefore(raw, at) : blankLineBefore(raw, at))) {
                        return false;
                    }
                    for (int i = end; i < limit; i++) {
                        byte c = raw[i];
                        if (c == ':' || c == '\\') {
                            return true;
                        }
                        if (c != ' ' && c != '\t') {
                            return false;
                        }
                    }
                    return true;
                case IGNORE:
                    return after == ' ' || after == '\t';
                case DOWNLOAD:
                    return !word(before) && !word(after) && (plain ? plainDownload(raw, end, limit) : download(raw, end, limit));
                default:
                    return true;
            }
        }

        /**
         * Before a role word: {@code \\n\\s*\\n}, written as {@code \\n} escapes with white space (and
         * {@code \\r}, {@code \\t}, {@code \\f} escapes) between; the string's opening quote counts as one
         * line end (the second pass joins values with one). True too where it cannot tell (an escaped
         * backslash, the start of what is held).
         */
        private static boolean blankLineBefore(byte[] raw, int at) {
            int lines = 0;
            int i = at - 1;
            while (i >= 0) {
                byte c = raw[i];
                if (c == ' ') {
                    i--;
                } else if (i >= 1 && raw[i - 1] == '\\' && (c == 'n' || c == 'r' || c == 't' || c == 'f')) {
                    if (i >= 2 && raw[i - 2] == '\\') {
                        return true; // an escaped backslash, or not: cannot tell cheaply
                    }
                    lines += c == 'n' ? 1 : 0;
                    if (lines >= 2) {
                        return true;
                    }
                    i -= 2;
                } else if (c == '"') {
                    return lines >= 1 || (i >= 1 && raw[i - 1] == '\\');
                } else {
                    return c == '\t' || c < 0 ? true : false;
                }
            }
            return true;
        }

        /** Plain text: the byte before {@code raw[at]}, or -1 when it is not held or not ASCII. */
        private static int plainBefore(byte[] raw, int at) {
            return at < 1 || raw[at - 1] < 0 ? -1 : raw[at - 1];
        }

        /**
         * Plain text, before a role word: a blank line ({@code \n\s*\n}); true too at the start of what is
         * held (where it cannot tell).
         */
        private static boolean plainBlankLineBefore(byte[] raw, int at) {
            int lines = 0;
            for (int i = at - 1; i >= 0; i--) {
                byte c = raw[i];
                if (c == '\n') {
                    if (++lines >= 2) {
                        return true;
                    }
                } else if (c != ' ' && c != '\t' && c != '\r' && c != 0x0b && c != '\f') {
                    return false;
                }
            }
            return true;
        }

        /** Plain text, after curl / wget: a pipe into a shell within 200 characters on the line. */
        private static boolean plainDownload(byte[] raw, int from, int limit) {
            int to = Math.min(limit, from + 201);
            for (int i = from; i < to; i++) {
                byte c = raw[i];
                if (c == '\n') {
                    return false;
                }
                if (c == '|') {
                    return pipedIntoShell(raw, i + 1, limit);
                }
            }
            return to == limit && to < from + 201; // not arrived yet: keep
        }

        /** After curl / wget: a pipe into a shell within 200 characters on the line and in the string. */
        private static boolean download(byte[] raw, int from, int limit) {
            int to = Math.min(limit, from + 201);
            for (int i = from; i < to; i++) {
                byte c = raw[i];
                if (c == '"') {
                    return false;
                }
                if (c == '\\') {
                    return i + 1 >= limit || raw[i + 1] != 'n';
                }
                if (c == '|') {
                    return pipedIntoShell(raw, i + 1, limit);
                }
            }
            return to == limit && to < from + 201; // not arrived yet: keep
        }

        /** After a pipe: {@code \s*(sudo\s+)?(ba|z|da)?sh\b}, case-insensitively. */
        private static boolean pipedIntoShell(byte[] raw, int i, int limit) {
            i = spaces(raw, i, limit);
            if (i < 0) {
                return true;
            }
            int j = word(raw, i, limit, "sudo");
            if (j > i) {
                int k = spaces(raw, j, limit);
                if (k < 0) {
                    return true;
                }
                i = k > j ? k : i;
            }
            for (String shell : new String[] {"sh", "bash", "zsh", "dash"}) {
                int e = word(raw, i, limit, shell);
                if (e < 0 || (e > i && (e >= limit || raw[e] == '\\' || !word(raw[e])))) {
                    return true;
                }
            }
            return false;
        }

        /**
         * Skips spaces and tabs from {@code i}: where they end, or -1 at a backslash, another white-space
         * control character (plain text's line feed) or the end of what arrived.
         */
        private static int spaces(byte[] raw, int i, int limit) {
            while (i < limit && (raw[i] == ' ' || raw[i] == '\t')) {
                i++;
            }
            return i >= limit || raw[i] == '\\' || (raw[i] >= 0 && raw[i] < 0x20) ? -1 : i;
        }

        /** The end of {@code w} at {@code raw[i]} (case-insensitive), {@code i} when absent, -1 when cut by the end. */
        private static int word(byte[] raw, int i, int limit, String w) {
            for (int j = 0; j < w.length(); j++) {
                if (i + j >= limit) {
                    return -1;
                }
                if ((raw[i + j] | 0x20) != w.charAt(j)) {
                    return i;
                }
            }
            return i + w.length();
        }

        /**
         * The character before the literal at {@code raw[at]} when the raw byte there is that character, or -1
         * when it may end an escape ({@code \\n}, {@code \\u0041}, {@code \\/}, {@code \\"}) or is not there.
         */
        private static int decodedBefore(byte[] raw, int at) {
            if (at < 1) {
                return -1;
            }
            int c = raw[at - 1];
            if (c == '"' && !(at >= 2 && raw[at - 2] == '\\')) {
                return '\n'; // the string's opening quote: the second pass has a line end there
            }
            if (c == '"' || c == '\\' || c == '/' || c < 0) {
                return -1;
            }
            if (alnum(c) && ((at >= 2 && raw[at - 2] == '\\') || (at >= 6 && raw[at - 6] == '\\'))) {
                return -1;
            }
            return c;
        }

        private static boolean alnum(int c) {
            return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
        }

        private static boolean word(int c) {
            return alnum(c) || c == '_';
        }
    }
}
