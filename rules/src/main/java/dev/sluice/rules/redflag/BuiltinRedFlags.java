package dev.sluice.rules.redflag;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The built-in red-flag detectors, by id. Each is a pure function over decoded text; none sees a
 * credential's value (that is the redactor's work). Matches are signals for review, not proof: each
 * detector's Javadoc says what it may flag wrongly.
 */
public final class BuiltinRedFlags {

    /** The built-in ids, in documentation order. */
    public static final List<String> IDS = List.of("credential_path", "encoded_shell", "template_injection",
            "instruction_boundary", "internal_reference");

    private static final int MAX_MATCH = 200;
    /**
     * Characters either side of a custom rule's keyword its pattern reads when the redactor's scan finds
     * the keyword ({@link RedFlagFold}); the second pass reads the whole batch.
     */
    static final int CUSTOM_REACH = 1024;
    private static final String[] PLAIN_SHELL = {"curl", "wget", "base64"};

    /** The path part of {@code credential_path}: every match's path starts at one of its literals. */
    private static final Pattern CREDENTIAL_PATH_AT = Pattern.compile("(?i)\\.ssh/|\\bid_(?:rsa|ed25519|ecdsa)\\b"
            + "|\\.aws/credentials|(?<![\\w.])\\.env\\b|\\.npmrc|\\.pypirc|\\.netrc|\\bkubeconfig\\b|\\.kube/config"
            + "|/etc/shadow");

    private BuiltinRedFlags() {
    }

    /**
     * Returns the built-in detector {@code id}, with {@code internalDomains} (lowercase suffixes such as
     * {@code corp.example}) for {@code internal_reference}; empty for an unknown id.
     */
    public static Optional<RedFlagDetector> byId(String id, List<String> internalDomains) {
        return Optional.ofNullable(switch (id) {
            case "credential_path" -> credentialPath();
            case "encoded_shell" -> encodedShell();
            case "template_injection" -> templateInjection();
            case "instruction_boundary" -> instructionBoundary();
            case "internal_reference" -> internalReference(internalDomains);
            default -> null;
        });
    }

    /**
     * {@code credential_path}: a verb that reads, copies or sends (cat, read, open, cp, scp, upload,
     * send, curl, base64, print, dump, exfiltrate, Get-Content…) followed within 80 characters on the same
     * line by a path that holds credentials: {@code .ssh/}, {@code id_rsa} / {@code id_ed25519},
     * {@code .aws/credentials}, {@code .env}, {@code .npmrc}, {@code .pypirc}, {@code .netrc},
     * {@code kubeconfig} / {@code .kube/config}, {@code /etc/shadow}.
     *
     * <p>False positives: setup instructions and documentation ("open ~/.ssh/config and add a Host"),
     * code reading a project's own {@code .env} (dotenv loaders), questions about these files. A path
     * without a verb is not flagged.
     */
    public static RedFlagDetector credentialPath() {
        return anchoredRegex("credential_path", CREDENTIAL_PATH_AT, Pattern.compile(
                "(?i)\\b(?:cat|less|more|head|tail|read|reads|open|cp|copy|scp|rsync|upload|send|post|curl|wget|"
                        + "base64|print|show|dump|exfiltrate|leak|type|get-content|xxd|tar|zip)\\b[^\\n]{0,80}?"
                        + "(?:\\.ssh/|\\bid_(?:rsa|ed25519|ecdsa)\\b|\\.aws/credentials|(?<![\\w.])\\.env\\b|\\.npmrc|"
                        + "\\.pypirc|\\.netrc|\\bkubeconfig\\b|\\.kube/config|/etc/shadow)"),
                Function.identity(), 100, 20, ".ssh/", "id_rsa", "id_ed25519", "id_ecdsa", ".aws/credentials", ".env",
                ".npmrc", ".pypirc", ".netrc", "kubeconfig", ".kube/config", "/etc/shadow");
    }

    /**
     * {@code encoded_shell}: base64 (at least 16 characters) or hex (at least 16 digits) that decodes to
     * a shell command line (a pipe into {@code sh} / {@code bash}, {@code curl} / {@code wget},
     * {@code bash -c}, {@code /bin/sh}, {@code nc -e}, {@code rm -rf}, {@code chmod +x}); a download
     * piped into a shell ({@code curl … | sh}); and a decode piped into a shell
     * ({@code base64 -d | sh}, {@code bash -c "$(echo … | base64 -d)"}).
     *
     * <p>False positives: install instructions of the {@code curl -fsSL https://… | sh} kind, which
     * documentation and READMEs carry in plain text; base64 test fixtures that happen to hold such
     * commands. Random base64 (keys, images) does not decode to a command line and is not flagged.
     */
    public static RedFlagDetector encodedShell() {
        // a download or a decode piped into a shell: each match starts at its literal (curl, wget, base64)
        Pattern plain = Pattern.compile("(?i)\\b(?:curl|wget)\\b[^\\n|]{0,200}\\|\\s*(?:sudo\\s+)?(?:ba|z|da)?sh\\b"
                + "|\\bbase64\\s+(?:-d|--decode|-D)\\b[^\\n]{0,40}\\|\\s*(?:sudo\\s+)?(?:ba|z|da)?sh\\b");
        // sh -c "$(… base64 -d)": a match ends at base64's decode flag
        Pattern decodeInShell = Pattern.compile("(?i)\\b(?:ba)?sh\\s+-c\\s+[\"']?\\$\\([^)]{0,200}base64\\s+(?:-d|--decode)");
        Pattern shell = Pattern.compile("(?i)\\|\\s*(?:sudo\\s+)?(?:ba|z|da)?sh\\b|\\b(?:curl|wget)\\s+\\S"
                + "|\\bbash\\s+-c\\b|/bin/(?:ba)?sh\\b|\\bnc\\s+-e\\b|\\brm\\s+-rf\\s|\\bchmod\\s+\\+x\\b");
        return new GatedDetector(PLAIN_SHELL) {
            @Override
            public boolean gateOnRuns() {
                return true;
            }

            @Override
            public int[] reach(String literal) {
                // curl / wget start their match; base64 may end one begun 260 characters before
                return literal.length() == 4 ? new int[] {2, 262} : new int[] {262, 262};
            }

            @Override
            public String id() {
                return "encoded_shell";
            }

            @Override
            public List<String> find(CharSequence text) {
                return find(text, text.toString().toLowerCase(Locale.ROOT));
            }

            @Override
            public List<String> find(CharSequence text, String lower) {
                Gated.Hits hits = new Gated.Hits();
                java.util.TreeMap<Integer, Integer> at = new java.util.TreeMap<>();
                if (lower.length() == text.length()) {
                    for (String l : PLAIN_SHELL) {
                        for (int i = lower.indexOf(l); i >= 0; i = lower.indexOf(l, i + 1)) {
                            at.put(i, l.length());
                        }
                    }
                } else {
                    // lower-casing changed the length (rare letters): every position is a candidate
                    for (int i = 0; i < text.length(); i++) {
                        at.put(i, 0);
                    }
                }
                at.forEach(hits::literal);
                // runs of the base64 alphabet (hex digits are a subset) of 16 or more characters
                int n = text.length();
                int start = -1;
                for (int i = 0; i <= n; i++) {
                    char c = i < n ? text.charAt(i) : ' ';
                    boolean b64 = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                            || c == '+' || c == '/';
                    if (b64) {
                        if (start < 0) {
                            start = i;
                        }
                        continue;
                    }
                    if (start >= 0 && i - start >= 16) {
                        hits.run(start, i);
                    }
                    start = -1;
                }
                return findAt(text, hits);
            }

            @Override
            public List<String> findAt(CharSequence text, Gated.Hits hits) {
                List<String> out = new ArrayList<>();
                int n = text.length();
                Matcher p = plain.matcher(text).useTransparentBounds(true).useAnchoringBounds(false);
                Matcher d = null;
                java.util.BitSet starts = null;
                for (int h = 0; h < hits.literalCount; h++) {
                    int at = hits.literals[2 * h];
                    p.region(at, Math.min(n, at + 260));
                    if (p.lookingAt()) {
                        out.add(cut(p.group()));
                    }
                    if (hits.literals[2 * h + 1] != 4) {
                        // base64 (or any position, in the fallback): the decode inside sh -c "$(…)"
                        if (d == null) {
                            d = decodeInShell.matcher(text).useTransparentBounds(true).useAnchoringBounds(false);
                            starts = new java.util.BitSet();
                        }
                        d.region(Math.max(0, at - 260), Math.min(n, at + 20));
                        while (d.find()) {
                            if (d.end() > at && !starts.get(d.start())) {
                                starts.set(d.start());
                                out.add(cut(d.group()));
                            }
                        }
                    }
                }
                for (int r = 0; r < hits.runCount; r++) {
                    String run = shellRun(shell, text, hits.runs[2 * r], hits.runs[2 * r + 1]);
                    if (run != null) {
                        out.add(run);
                    }
                }
                return out;
            }
        };
    }

    /**
     * The run {@code text[start, end)} of the base64 alphabet (16 or more characters) when it decodes to
     * a shell command line, else null. Base64 of a command line has capitals (its 6-bit groups spread over
     * the alphabet); a run without any, or one that is mostly slashes (a path), is not decoded; a run of
     * hex digits is decoded as hex when its length is even.
     */
    private static @Nullable String shellRun(Pattern shell, CharSequence text, int start, int end) {
        boolean allHex = true;
        boolean upper = false;
        int slashes = 0;
        for (int i = start; i < end; i++) {
            char c = text.charAt(i);
            allHex &= (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
            upper |= c >= 'A' && c <= 'Z';
            if (c == '/') {
                slashes++;
            }
        }
        if (!(allHex || (upper && slashes * 8 < end - start))) {
            return null;
        }
        String run = text.subSequence(start, end).toString();
        String decoded = allHex && run.length() % 2 == 0 ? printable(HexFormat.of().parseHex(run)) : decodeBase64(run);
        return decoded != null && shell.matcher(decoded).find() ? cut(run) : null;
    }

    /**
     * {@code template_injection}: {@code ${…}}, {@code {{…}}} or {@code <%…%>} whose content looks like
     * code — a call, member access, index, filter or lookup ({@code (}, {@code .}, {@code [}, {@code |},
     * {@code :}, {@code __}) — such as {@code ${jndi:ldap://…}}, {@code {{config.__class__}}},
     * {@code <%= system("id") %>}. A bare name ({@code ${HOME}}, {@code {{name}}}) is not flagged.
     *
     * <p>False positives: source code in a prompt that uses template literals or templating engines
     * ({@code `${user.name}`} in JavaScript, Jinja or Helm templates, ERB views); a developer asking
     * about such code will trip it.
     */
    public static RedFlagDetector templateInjection() {
        return anchoredRegex("template_injection", Pattern.compile(
                "\\$\\{[^{}\\n]{0,200}?(?:[(.\\[|:]|__)[^{}\\n]{0,200}?\\}"
                        + "|\\{\\{[^{}\\n]{0,200}?(?:[(.\\[|:]|__)[^{}\\n]{0,200}?\\}\\}"
                        + "|<%=?[^%\\n]{0,200}?(?:[(.\\[|:]|__)[^%\\n]{0,200}?%>"),
                Function.identity(), 0, 420, "${", "{{", "<%");
    }

    /**
     * {@code instruction_boundary}: chat-format control markers or fake role turns inside text, where a
     * tool result or a fetched page tries to pass for the system or another party:
     * {@code <|im_start|>}, {@code <|im_end|>}, {@code <|system|>}, {@code <|endoftext|>}, {@code [INST]},
     * {@code <<SYS>>}, {@code <system>} / {@code </system>} tags, a blank line followed by
     * {@code Human:} / {@code Assistant:} / {@code System:}, and "ignore (all) previous instructions".
     *
     * <p>False positives: conversations about prompt formats, model training data or prompt-injection
     * defences quote these markers; transcripts pasted into a prompt carry {@code Human:} turns.
     */
    public static RedFlagDetector instructionBoundary() {
        return anchoredRegex("instruction_boundary", Pattern.compile(
                "<\\|(?:im_start|im_end|system|user|assistant|endoftext)\\|>|\\[/?INST\\]|<</?SYS>>"
                        + "|</?system>|\\n\\s*\\n(?:Human|Assistant|System)\\s*:"
                        + "|(?i:ignore\\s+(?:all\\s+)?(?:the\\s+)?previous\\s+instructions)"),
                Function.identity(), 80, 80, "<|", "[inst]", "[/inst]", "<<sys>>", "<</sys>>", "<system>", "</system>",
                "human", "assistant", "system", "ignore");
    }

    /**
     * {@code internal_reference}: private IPv4 addresses (10/8, 172.16/12, 192.168/16, RFC 1918) and
     * host names under {@code .internal}, {@code .corp}, {@code .lan}, {@code .intranet},
     * {@code .local} or a configured internal domain. Meant for responses: the scan flags a reference
     * only when the request did not contain it (the model brought it up on its own).
     *
     * <p>False positives: a model that suggests example addresses ({@code 192.168.1.1} for a router) or
     * names from its training data; documentation ranges (192.0.2.0/24) are not private and not flagged.
     */
    public static RedFlagDetector internalReference(List<String> internalDomains) {
        StringBuilder suffixes = new StringBuilder("internal|corp|lan|intranet|local");
        for (String d : internalDomains) {
            suffixes.append('|').append(Pattern.quote(d.toLowerCase(Locale.ROOT)));
        }
        List<String> literals = new ArrayList<>(List.of("10.", "172.", "192.168.", ".internal", ".corp", ".lan",
                ".intranet", ".local"));
        for (String d : internalDomains) {
            literals.add("." + d.toLowerCase(Locale.ROOT));
        }
        return anchoredRegex("internal_reference", Pattern.compile(
                "(?<![\\d.])(?:10\\.\\d{1,3}|172\\.(?:1[6-9]|2\\d|3[01])|192\\.168)\\.\\d{1,3}\\.\\d{1,3}(?![\\d.]*\\d)"
                        + "|(?i)\\b(?:[a-z0-9-]{1,63}\\.)+(?:" + suffixes + ")\\b(?![.-]?[a-z0-9])"),
                m -> m.toLowerCase(Locale.ROOT), 80, 20, literals.toArray(String[]::new));
    }

    /**
     * A custom detector ({@code red_flags.rules[i]} with {@code pattern} and {@code keywords}): the
     * pattern runs only on text holding one of the keywords (case-insensitive).
     */
    public static RedFlagDetector custom(String id, Pattern pattern, List<String> keywords) {
        List<String> lower = keywords.stream().map(k -> k.toLowerCase(Locale.ROOT)).toList();
        RedFlagDetector inner = regex(id, pattern);
        return new GatedDetector(lower.toArray(String[]::new)) {
            @Override
            public String id() {
                return id;
            }

            @Override
            public int[] reach(String literal) {
                return new int[] {CUSTOM_REACH, CUSTOM_REACH};
            }

            @Override
            public boolean custom() {
                return true;
            }

            @Override
            public List<String> find(CharSequence text) {
                return find(text, text.toString().toLowerCase(Locale.ROOT));
            }

            @Override
            public List<String> findAt(CharSequence text, Gated.Hits hits) {
                return inner.find(text);
            }

            @Override
            public List<String> find(CharSequence text, String t) {
                for (String k : lower) {
                    if (t.contains(k)) {
                        return inner.find(text);
                    }
                }
                return List.of();
            }
        };
    }

    /**
     * Runs {@code pattern} only around the occurrences of {@code literals} in the lowercased text: in
     * {@code [at - before, at + literal + after)}, with transparent bounds (look-arounds and {@code \\b}
     * see the text outside), so it finds what a scan of the whole text finds as long as every match
     * lies within {@code before} characters before and {@code after} after one of its literals.
     */
    private static List<String> anchored(Pattern pattern, CharSequence text, String lower, String[] literals,
                                         int before, int after, Function<String, String> normalise) {
        if (lower.length() != text.length()) {
            // lower-casing changed the length (rare letters): fall back to the whole text
            Matcher all = pattern.matcher(text);
            List<String> out = new ArrayList<>();
            while (all.find()) {
                out.add(normalise.apply(cut(all.group())));
            }
            return out;
        }
        java.util.TreeMap<Integer, Integer> hits = new java.util.TreeMap<>();
        for (String l : literals) {
            for (int at = lower.indexOf(l); at >= 0; at = lower.indexOf(l, at + 1)) {
                hits.merge(at, l.length(), Math::max);
            }
        }
        Gated.Hits h = new Gated.Hits();
        for (Map.Entry<Integer, Integer> hit : hits.entrySet()) {
            h.literal(hit.getKey(), hit.getValue());
        }
        return anchoredAt(pattern, text, h, before, after, normalise);
    }

    /** The core of {@link #anchored}: {@code hits.literals} in ascending order of position. */
    static List<String> anchoredAt(Pattern pattern, CharSequence text, Gated.Hits hits, int before, int after,
                                   Function<String, String> normalise) {
        List<String> out = null;
        java.util.BitSet starts = null;
        Matcher m = null;
        int scannedTo = 0;
        for (int i = 0; i < hits.literalCount; i++) {
            int at = hits.literals[2 * i];
            int from = Math.max(Math.max(0, at - before), scannedTo);
            int to = Math.min(text.length(), at + hits.literals[2 * i + 1] + after);
            if (from >= to) {
                continue;
            }
            if (m == null) {
                m = pattern.matcher(text).useTransparentBounds(true).useAnchoringBounds(false);
            }
            m.region(from, to);
            while (m.find()) {
                if (starts == null) {
                    starts = new java.util.BitSet();
                    out = new ArrayList<>();
                }
                if (!starts.get(m.start())) {
                    starts.set(m.start());
                    out.add(normalise.apply(cut(m.group())));
                }
            }
            scannedTo = Math.max(from, to - before - after);
        }
        return out == null ? List.of() : out;
    }

    private static RedFlagDetector anchoredRegex(String id, Pattern pattern, Function<String, String> normalise,
                                                 int before, int after, String... literals) {
        return anchoredRegex(id, null, pattern, normalise, before, after, literals);
    }

    /**
     * As above; {@code at} (null for none) must match at a literal ({@code lookingAt}) for the region
     * around it to be searched: for a pattern each of whose matches holds a match of {@code at} starting at
     * one of the literals, it only skips regions that cannot match.
     */
    private static RedFlagDetector anchoredRegex(String id, Pattern at, Pattern pattern,
                                                 Function<String, String> normalise, int before, int after,
                                                 String... literals) {
        return new GatedDetector(literals) {
            @Override
            public String id() {
                return id;
            }

            @Override
            public int[] reach(String literal) {
                // the region anchoredAt searches, plus a character either side for look-arounds
                return new int[] {before + 2, literal.length() + after + 2};
            }

            @Override
            public List<String> find(CharSequence text, String lower) {
                return at == null ? anchored(pattern, text, lower, literals, before, after, normalise)
                        : find(text);
            }

            @Override
            public List<String> find(CharSequence text) {
                String lower = text.toString().toLowerCase(Locale.ROOT);
                if (at == null || lower.length() != text.length()) {
                    return anchored(pattern, text, lower, literals, before, after, normalise);
                }
                java.util.TreeMap<Integer, Integer> hits = new java.util.TreeMap<>();
                for (String l : literals) {
                    for (int i = lower.indexOf(l); i >= 0; i = lower.indexOf(l, i + 1)) {
                        hits.merge(i, l.length(), Math::max);
                    }
                }
                Gated.Hits h = new Gated.Hits();
                hits.forEach(h::literal);
                return findAt(text, h);
            }

            @Override
            public List<String> findAt(CharSequence text, Gated.Hits hits) {
                if (at != null) {
                    Matcher m = at.matcher(text).useTransparentBounds(true).useAnchoringBounds(false);
                    Gated.Hits confirmed = new Gated.Hits();
                    for (int i = 0; i < hits.literalCount; i++) {
                        int p = hits.literals[2 * i];
                        m.region(p, text.length());
                        if (m.lookingAt()) {
                            confirmed.literal(p, hits.literals[2 * i + 1]);
                        }
                    }
                    if (confirmed.literalCount == 0) {
                        return List.of();
                    }
                    hits = confirmed;
                }
                return anchoredAt(pattern, text, hits, before, after, normalise);
            }
        };
    }

    private static RedFlagDetector regex(String id, Pattern pattern) {
        return regex(id, pattern, Function.identity(), lower -> true);
    }

    /**
     * A regex detector; {@code prefilter} is asked first with the lowercased text and must answer true
     * whenever the pattern could match (it only saves the regex on text that cannot).
     */
    private static RedFlagDetector regex(String id, Pattern pattern, Function<String, String> normalise,
                                         java.util.function.Predicate<String> prefilter) {
        return new RedFlagDetector() {
            @Override
            public String id() {
                return id;
            }

            @Override
            public List<String> find(CharSequence text, String lower) {
                return prefilter.test(lower) ? find(text) : List.of();
            }

            @Override
            public List<String> find(CharSequence text) {
                Matcher m = pattern.matcher(text);
                List<String> out = null;
                while (m.find()) {
                    if (out == null) {
                        out = new ArrayList<>();
                    }
                    out.add(normalise.apply(cut(m.group())));
                }
                return out == null ? List.of() : out;
            }
        };
    }

    private static String cut(String s) {
        return s.length() > MAX_MATCH ? s.substring(0, MAX_MATCH) : s;
    }

    private static @Nullable String decodeBase64(String s) {
        String t = s.replace("=", "");
        if (t.length() % 4 == 1) {
            t = t.substring(0, t.length() - 1);
        }
        try {
            return printable(Base64.getDecoder().decode(pad(t)));
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static String pad(String t) {
        int r = t.length() % 4;
        return r == 0 ? t : t + "==".substring(0, 4 - r);
    }

    /** The bytes as text when they are mostly printable ASCII (a command line), else null. */
    private static @Nullable String printable(byte[] bytes) {
        if (bytes.length == 0) {
            return null;
        }
        int ok = 0;
        for (byte b : bytes) {
            if ((b >= 0x20 && b < 0x7f) || b == '\n' || b == '\t') {
                ok++;
            }
        }
        return ok * 10 >= bytes.length * 9 ? new String(bytes, StandardCharsets.US_ASCII) : null;
    }

    /**
     * A detector with a literal gate: {@link RedFlagScan} runs it only on batches holding one of its
     * literals. A literal that is empty or not ASCII (a custom keyword) makes the gate always open.
     */
    abstract static class GatedDetector implements RedFlagDetector, Gated {
        private final String[] literals;

        GatedDetector(String[] literals) {
            this.literals = literals.clone();
        }

        @Override
        public String[] gateLiterals() {
            return literals.clone();
        }
    }

    /** For documentation and tests: every built-in detector without configured domains. */
    static Map<String, RedFlagDetector> all() {
        Map<String, RedFlagDetector> m = new java.util.LinkedHashMap<>();
        for (String id : IDS) {
            m.put(id, byId(id, List.of()).orElseThrow());
        }
        return m;
    }
}
