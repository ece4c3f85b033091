package dev.sluice.rules.redact;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Detectors for secrets written <em>encoded</em>: a candidate token is decoded and the decoded bytes are
 * scanned again by the same {@link DetectorSet} (in the same streaming pass, see
 * {@link StreamingRedactor}); when the inner scan finds a secret, the <em>whole encoded token</em> is
 * replaced and the finding counts under the inner detector's id (so {@code [REDACTED:github-pat]} for
 * the base64 of a GitHub token). The ids of the detectors here never appear in findings.
 *
 * <p>Bounds: a token is at most {@value #MAX_BASE64} (base64) or {@value #MAX_ESCAPED} (escapes)
 * characters; decoding nests at most {@value #MAX_DEPTH} levels (the base64 of a {@code \x}-escaped
 * token is found, a third level is not).
 *
 * <p>Gates, so that clean text pays little: each detector has keywords of its own, and only a token
 * that starts with one is decoded. For base64 the keywords are the base64 forms of vendor prefixes
 * ({@code Z2hwX} is base64 of {@code ghp_}): a token whose <em>first</em> decoded bytes are a vendor
 * prefix (the usual {@code echo -n $TOKEN | base64}). For escapes the keywords are {@code \x} and
 * {@code &#92;u} followed by hex digits (checked by the precheck). {@link #BASE64_TEXT} is keyed on the
 * base64 forms of assignment words instead, anywhere in a run, for whole texts written in base64. Sources: RFC 4648 sections 4 and 5
 * (base64, base64url); ECMAScript and C string escapes ({@code \xHH}, {@code &#92;uHHHH}); RFC 8259 section 7
 * (JSON {@code &#92;u} escapes, here one level deeper than the body's own JSON); RFC 3986 section 2.1.
 */
public final class EncodedDetectors {

    /** Decoding levels at most: a token decoded inside a decoded token, no deeper. */
    public static final int MAX_DEPTH = 2;
    /** Longest base64 token decoded, in characters. */
    public static final int MAX_BASE64 = 8192;
    /** Longest escaped token decoded, in characters. */
    public static final int MAX_ESCAPED = 2048;

    private EncodedDetectors() {
    }

    /**
     * The marker validator of a decoding detector: {@link #test} is the cheap gate (the token decodes),
     * {@link #decode} gives the bytes the redactor scans again.
     */
    abstract static class Decoding implements Predicate<String> {
        /** The decoded bytes of {@code token}, or null when it does not decode or decodes to itself. */
        abstract byte[] decode(String token);

        @Override
        public boolean test(String token) {
            return decode(token) != null;
        }
    }

    /**
     * Vendor prefixes whose base64 forms are keywords, exact case. Each is a format a detector of
     * {@link BuiltinDetectors} or {@link VendorDetectors} knows bare.
     */
    static final List<String> BASE64_PREFIXES = List.of(
            "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "xoxa-", "xapp-",
            "sk_live_", "rk_live_", "sk-proj-", "sk-ant-", "sk-admin-", "sk-or-v1-", "AKIA", "ASIA", "AIza",
            "npm_", "hf_", "shpat_", "dop_v1_", "hvs.", "gsk_", "glsa_", "ATATT", "ntn_", "sbp_", "lin_api_",
            "PMAK-", "dckr_pat_", "GOCSPX-", "ya29.", "tskey-", "HRKU-", "NRAK-", "pscale_tkn_", "AGE-SECRET-KEY-",
            "vcp_", "nfp_", "sntryu_", "xai-", "pypi-");

    /** The base64 characters fully determined by {@code prefix} at the start of a token. */
    static String base64Stem(String prefix) {
        String b = Base64.getEncoder().withoutPadding().encodeToString(prefix.getBytes(StandardCharsets.US_ASCII));
        return b.substring(0, prefix.length() * 8 / 6);
    }

    private static final Decoding BASE64 = new Decoding() {
        @Override
        byte[] decode(String token) {
            return base64(token);
        }
    };

    /** Decodes base64 or base64url (padding optional, a trailing partial quantum dropped), or null. */
    static byte @Nullable [] base64(String token) {
        String t = token;
        int eq = t.indexOf('=');
        if (eq >= 0) {
            t = t.substring(0, eq);
        }
        t = t.substring(0, t.length() - (t.length() % 4 == 1 ? 1 : 0));
        boolean url = t.indexOf('-') >= 0 || t.indexOf('_') >= 0;
        if (url && (t.indexOf('+') >= 0 || t.indexOf('/') >= 0)) {
            return null;
        }
        try {
            return (url ? Base64.getUrlDecoder() : Base64.getDecoder()).decode(t);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static List<String> base64Keywords() {
        Set<String> k = new LinkedHashSet<>();
        for (String p : BASE64_PREFIXES) {
            k.add(base64Stem(p).toLowerCase(Locale.ROOT));
        }
        return new ArrayList<>(k);
    }

    private static String base64Regex() {
        StringBuilder b = new StringBuilder("(?<![A-Za-z0-9+/_-])((?:");
        Set<String> stems = new LinkedHashSet<>();
        for (String p : BASE64_PREFIXES) {
            stems.add(base64Stem(p));
        }
        b.append(String.join("|", stems));
        b.append(")[A-Za-z0-9+/_-]{8,").append(MAX_BASE64 - 24).append("}={0,2})(?![A-Za-z0-9+/=_-])");
        return b.toString();
    }

    /**
     * A vendor token written in base64 or base64url as a whole ({@code echo -n $TOKEN | base64}, a
     * Kubernetes Secret value, a CI variable): the run starts with the base64 form of a vendor prefix,
     * decodes, and the decoded bytes hold a secret another detector finds. Source: RFC 4648 sections 4
     * and 5.
     */
    public static final Detector BASE64_TOKEN = new Detector("encoded-base64",
            "a secret written in base64 (decoded and scanned again)", base64Keywords(),
            Pattern.compile(base64Regex()), 1, 0, BASE64, 0, MAX_BASE64, true, null);

    /**
     * Words of the assignments and configuration keys a secret follows in a {@code .env} file, a YAML or
     * JSON config or a Docker {@code config.json} ({@code DB_PASSWORD=}, {@code api_key:},
     * {@code "auth": "..."}), exact case: their base64 forms at the three alignments are the keywords of
     * {@link #BASE64_TEXT}. {@code assword}, {@code ecret} and {@code oken} cover the lowercase and the
     * capitalised word.
     */
    static final List<String> BASE64_TEXT_WORDS = List.of(
            "PASSWORD", "assword", "SECRET", "ecret", "TOKEN", "oken", "API_KEY", "api_key", "apiKey", "\"auth\"");

    /** How far into a base64 run a word of {@link #BASE64_TEXT_WORDS} may lie, in characters. */
    public static final int MAX_TEXT_OFFSET = 4096;

    /**
     * The base64 characters fully determined by {@code word} when it begins at a decoded offset of
     * {@code alignment} (0, 1 or 2) modulo 3: the characters that every base64 text holding the word at
     * such an offset has, whatever the bytes around it.
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

    /** The stems of {@link #BASE64_TEXT_WORDS} at the three alignments, lowercase (keywords fold case). */
    private static List<String> base64TextKeywords() {
        Set<String> k = new LinkedHashSet<>();
        for (String w : BASE64_TEXT_WORDS) {
            for (int a = 0; a < 3; a++) {
                k.add(base64Stem(w, a).toLowerCase(Locale.ROOT));
            }
        }
        return new ArrayList<>(k);
    }

    /**
     * The decoder of {@link #BASE64_TEXT}: the run must decode to text (no control byte other than tab,
     * line feed and carriage return; at most one byte in eight outside ASCII), which random data, images,
     * DER certificates, hashes and integrity digests do not.
     */
    static final class Base64Text extends Decoding {
        @Override
        byte @Nullable [] decode(String token) {
            if (token.startsWith("eyJhdXRocyI6") || token.startsWith("LS0tLS1CRUdJTi")) {
                return null; // a Docker config or a PEM text: their own detectors decide (and name the finding)
            }
            byte[] b = base64(token);
            return b != null && isText(b) ? b : null;
        }
    }

    /** Answers whether {@code b} looks like text: see {@link Base64Text}. */
    static boolean isText(byte[] b) {
        if (b.length < 12) {
            return false;
        }
        int high = 0;
        for (byte x : b) {
            int c = x & 0xff;
            if (c >= 0x80) {
                high++;
            } else if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
                return false;
            }
        }
        return high * 8 <= b.length;
    }

    /** After a keyword of {@link #BASE64_TEXT}: the run goes on for 16 base64 characters (or ends in '='). */
    private static boolean base64RunFollows(byte[] text, int start, int limit) {
        for (int i = start, n = 0; n < 16; i++, n++) {
            if (i >= limit) {
                return true;
            }
            byte b = text[i];
            if (b == '=') {
                return n >= 8;
            }
            if (!isBase64Char(b)) {
                return false;
            }
        }
        return true;
    }

    /** A character of base64 or base64url. */
    static boolean isBase64Char(byte b) {
        return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '+' || b == '/'
                || b == '_' || b == '-';
    }

    /**
     * A text written in base64 as a whole whose secrets have no vendor prefix: a {@code .env} file or a
     * config in a Kubernetes Secret's {@code data} or a CI variable ({@code DB_PASSWORD=...} and
     * {@code API_TOKEN=...}, base64'd), a Docker {@code config.json} with other members before
     * {@code auths}. Triggered by the base64 forms of {@link #BASE64_TEXT_WORDS} at any of the three
     * alignments anywhere in the first {@value #MAX_TEXT_OFFSET} characters of the run; the run (24 to
     * {@value #MAX_BASE64} characters) must decode to text (see {@link Base64Text}), which is then scanned
     * again with every detector, the context and assignment detectors among them; the whole run is
     * replaced. Its look-back is bounded by the run, not held back in front of all text: see
     * {@link #looksBackInRun}. Source: RFC 4648 sections 4 and 5; Kubernetes documentation, "Secrets".
     */
    public static final Detector BASE64_TEXT = new Detector("encoded-base64-text",
            "a text (.env, config) written in base64, decoded and scanned again", base64TextKeywords(),
            Pattern.compile("(?<![A-Za-z0-9+/_-])([A-Za-z0-9+/_-]{24," + (MAX_BASE64 - 2) + "}={0,2})(?![A-Za-z0-9+/=_-])"),
            1, 0, new Base64Text(), MAX_TEXT_OFFSET, MAX_BASE64, false, EncodedDetectors::base64RunFollows);

    /**
     * Answers whether {@code d} looks back only within a base64 run: its {@link Detector#maxCharsBeforeKeyword()}
     * is not held back before all text; instead the redactor keeps a base64 run whole (up to that many
     * characters) while it may still hold one of the detector's keywords.
     */
    static boolean looksBackInRun(Detector d) {
        return d.validator() instanceof Base64Text;
    }

    /**
     * Answers whether every keyword of {@code d} counts only inside a base64 run: the base64 stems of
     * {@link #BASE64_TOKEN} and {@link #BASE64_TEXT}, whose patterns need a run of at least 13 and 24
     * characters, and whose decoded text must hold a secret (no vendor token is shorter than 12 bytes,
     * 16 base64 characters). The {@link KeywordPrefilter} then reports them only inside runs of at
     * least {@value KeywordPrefilter#RUN} run characters, found in the same vector pass, instead of
     * verifying every position that looks like a stem.
     */
    static boolean keywordsInBase64Run(Detector d) {
        return d.validator() == BASE64 || d.validator() instanceof Base64Text;
    }

    private static final Decoding ESCAPES = new Decoding() {
        @Override
        byte[] decode(String token) {
            return unescape(token);
        }
    };

    private static int hex(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        int l = c | 0x20;
        return l >= 'a' && l <= 'f' ? l - 'a' + 10 : -1;
    }

    /**
     * Undoes {@code \xHH} and {@code &#92;uHHHH} escapes (the latter as UTF-8); null when the token holds
     * none (it then decodes to itself).
     */
    static byte[] unescape(String token) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(token.length());
        boolean any = false;
        int n = token.length();
        for (int i = 0; i < n; i++) {
            char c = token.charAt(i);
            if (c == '\\' && i + 3 < n && token.charAt(i + 1) == 'x' && hex(token.charAt(i + 2)) >= 0
                    && hex(token.charAt(i + 3)) >= 0) {
                out.write(hex(token.charAt(i + 2)) << 4 | hex(token.charAt(i + 3)));
                i += 3;
                any = true;
            } else if (c == '\\' && i + 5 < n && token.charAt(i + 1) == 'u' && hex4(token, i + 2) >= 0) {
                int cp = hex4(token, i + 2);
                byte[] b = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8);
                out.write(b, 0, b.length);
                i += 5;
                any = true;
            } else {
                out.write(c);
            }
        }
        return any ? out.toByteArray() : null;
    }

    private static int hex4(String s, int at) {
        int v = 0;
        for (int k = 0; k < 4; k++) {
            int h = hex(s.charAt(at + k));
            if (h < 0) {
                return -1;
            }
            v = v << 4 | h;
        }
        return v;
    }

    private static boolean isHexByte(byte b) {
        return hex((char) (b & 0xff)) >= 0;
    }

    /** {@code \x} or {@code &#92;u} then 2 or 4 hex digits (true when they have not all arrived). */
    private static boolean escapeFollows(byte[] text, int start, int limit) {
        int digits = start + 1 < limit && text[start + 1] == 'u' ? 4 : 2;
        for (int k = 0; k < digits; k++) {
            int i = start + 2 + k;
            if (i >= limit) {
                return true;
            }
            if (!isHexByte(text[i])) {
                return false;
            }
        }
        return true;
    }

    /**
     * A secret written with {@code \xHH} or {@code &#92;uHHHH} escapes ({@code printf '\x67\x68...'}, a
     * JavaScript or Python string literal, a JSON string inside a JSON string): the token around the
     * escapes (escapes and token characters) is decoded and scanned again. Source: ECMAScript 2024
     * section 12.9.4 (string literal escapes); RFC 8259 section 7.
     */
    public static final Detector ESCAPED_TOKEN = new Detector("encoded-escapes",
            "a secret written with \\x or \\u escapes (decoded and scanned again)", List.of("\\x", "\\u"),
            Pattern.compile("(?<![A-Za-z0-9_+/=.-])((?:[A-Za-z0-9_+/=.-]|\\\\x[0-9A-Fa-f]{2}|\\\\u[0-9A-Fa-f]{4}){12,"
                    + MAX_ESCAPED + "})"),
            1, 0, ESCAPES, 64, MAX_ESCAPED + 64, false, EncodedDetectors::escapeFollows);

    private static final Decoding PERCENT = new Decoding() {
        @Override
        byte[] decode(String token) {
            return percentDecode(token);
        }
    };

    /** Undoes {@code %HH} escapes ({@code +} is kept); null when the token holds none. */
    static byte[] percentDecode(String token) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(token.length());
        boolean any = false;
        int n = token.length();
        for (int i = 0; i < n; i++) {
            char c = token.charAt(i);
            if (c == '%' && i + 2 < n && hex(token.charAt(i + 1)) >= 0 && hex(token.charAt(i + 2)) >= 0) {
                out.write(hex(token.charAt(i + 1)) << 4 | hex(token.charAt(i + 2)));
                i += 2;
                any = true;
            } else {
                out.write(c);
            }
        }
        return any ? out.toByteArray() : null;
    }

    /** After {@code %HH}: at least 6 more token characters or escapes (true when they have not all arrived). */
    private static boolean percentTokenFollows(byte[] text, int start, int limit) {
        int i = start + 3;
        for (int k = 0; k < 6; k++, i++) {
            if (i >= limit) {
                return true;
            }
            byte b = text[i];
            boolean token = (b >= '0' && b <= '9') || ((b | 0x20) >= 'a' && (b | 0x20) <= 'z') || b == '%' || b == '_'
                    || b == '-' || b == '.' || b == '+' || b == '/' || b == '=' || b == ':' || b == '~';
            if (!token) {
                return false;
            }
        }
        return true;
    }

    /**
     * A secret written percent-encoded as part of a longer token: a URL-encoded header or assignment in
     * a log line ({@code Authorization%3A%20Bearer%20...}, {@code api_key%3D...}), a URL nested in a query
     * parameter. The token (unreserved characters, {@code : / + =} and escapes; no {@code &}, so each
     * form field is a token of its own) is decoded and scanned again; the whole token is replaced.
     * Triggered by the escapes of a space, {@code :}, {@code =}, {@code /}, {@code +} and {@code @}.
     * Source: RFC 3986 section 2.1 (percent-encoding); WHATWG URL Standard,
     * application/x-www-form-urlencoded.
     */
    public static final Detector PERCENT_TOKEN = new Detector("encoded-percent",
            "a secret written percent-encoded (decoded and scanned again)",
            List.of("%20", "%3a", "%3d", "%2f", "%2b", "%40"),
            Pattern.compile("(?<![A-Za-z0-9_.~+/=:%-])((?:[A-Za-z0-9_.~+/=:-]|%[0-9A-Fa-f]{2}){12," + MAX_ESCAPED + "})"),
            1, 0, PERCENT, 64, MAX_ESCAPED + 64, false, EncodedDetectors::percentTokenFollows);

    /** The detectors of this class, in registration order. */
    static List<Detector> all() {
        return List.of(BASE64_TOKEN, BASE64_TEXT, ESCAPED_TOKEN, PERCENT_TOKEN);
    }
}
