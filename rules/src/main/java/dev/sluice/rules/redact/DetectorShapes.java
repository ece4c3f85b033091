package dev.sluice.rules.redact;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Building blocks of the built-in detectors ({@link BuiltinDetectors}, {@link VendorDetectors},
 * {@link ContextDetectors}): the constructors for the common detector shapes and the validators that
 * tell a secret from a placeholder, a documented example or a code expression. Depends on no detector
 * list, so the detector classes can be initialised in any order.
 */
final class DetectorShapes {

    /** Not preceded by an ASCII letter or digit. */
    static final String NB = "(?<![A-Za-z0-9])";
    /** Not followed by an ASCII letter or digit. */
    static final String NA = "(?![A-Za-z0-9])";
    /** Not followed by a base64url character. */
    static final String NA_URL = "(?![A-Za-z0-9_-])";
    /**
     * After a label: optional escaped quote, up to four spaces, an assignment ({@code :=}, {@code =>},
     * {@code :} or {@code =}), up to four spaces, an optional (escaped) quote.
     */
    static final String ASSIGN = "\\\\?[\"']?\\s{0,4}+(?::=|=>|[:=])\\s{0,4}+\\\\?[\"']?";

    private DetectorShapes() {
    }

    /**
     * The precheck of the generic assignment, shared by the vendor-label detectors whose patterns it
     * over-approximates (a name of up to 45 characters, an assignment, 8 value characters, not a code
     * identifier): one object, so the redactor evaluates it once per keyword hit.
     */
    static final Precheck ASSIGNMENT_PRECHECK = Precheck.assignment(45, 8, true);

    /** A detector whose keyword begins the match (a vendor prefix); every validator also refuses documented examples. */
    static Detector prefixed(String id, String description, List<String> keywords, String regex, int maxLength,
                             double minEntropy, Predicate<String> validator) {
        return new Detector(id, description, keywords, Pattern.compile(regex), 0, minEntropy, checked(validator), 0,
                maxLength, true);
    }

    /** A detector whose keyword (a label) begins the match and whose group 1 is the secret. */
    static Detector labelled(String id, String description, List<String> keywords, String regex, int maxLength,
                             double minEntropy, Predicate<String> validator) {
        return new Detector(id, description, keywords, Pattern.compile(regex), 1, minEntropy, checked(validator), 0,
                maxLength, false);
    }

    /**
     * A labelled detector whose pattern is {@code label name-chars quote? spaces (:|=) ...}; with
     * {@code identifiersRejected}, its validator rejects every code identifier, so the precheck may too
     * (see {@link Precheck#assignment(int, int, boolean)}).
     */
    static Detector assignment(String id, String description, List<String> keywords, String regex, int maxLength,
                               double minEntropy, Predicate<String> validator, int maxNameChars, int minValueChars,
                               boolean identifiersRejected) {
        Precheck precheck = maxNameChars == 45 && minValueChars == 8 && identifiersRejected ? ASSIGNMENT_PRECHECK
                : Precheck.assignment(maxNameChars, minValueChars, identifiersRejected);
        return new Detector(id, description, keywords, Pattern.compile(regex), 1, minEntropy, checked(validator), 0,
                maxLength, false, precheck);
    }

    /** {@code validator} (null for none) and {@link #notDocumentedExample}. */
    static Predicate<String> checked(@Nullable Predicate<String> validator) {
        return validator == null ? DetectorShapes::notDocumentedExample
                : s -> notDocumentedExample(s) && validator.test(s);
    }

    // ---------------------------------------------------------------- validators

    private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z_]{0,127}(?:\\.[A-Za-z_][A-Za-z_]{0,127}){0,16}");
    private static final Pattern MEMBER_ACCESS =
            Pattern.compile("[A-Za-z_$][A-Za-z0-9_$]{0,63}(?:(?:\\.|\\?\\.|::|->)[A-Za-z_$][A-Za-z0-9_$]{0,63}){1,16}");
    private static final Pattern UUID =
            Pattern.compile("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
    private static final Pattern HASH_PREFIX = Pattern.compile("(?i)(?:sha(?:1|224|256|384|512)|md5|blake2b?|sha3-\\d{3})[-:=].*");
    private static final List<String> PLACEHOLDER_WORDS = List.of("password", "passwd", "changeme", "example", "placeholder",
            "redacted", "dummy", "sample", "xxxx", "****", "....", "your_", "your-", "<", "${", "{{", "%s", "replace_me",
            "replace-me", "insert_", "insert-", "todo", "fixme", "secret_here", "token_here", "key_here");
    private static final List<String> CODE_MARKERS = List.of("||", "&&", "()", "=>", "?.", "!=", "->", "::",
            ".get", ".getenv", "environ");

    /**
     * Refuses documented example values in every built-in detector: anything holding {@code EXAMPLE} (the
     * AWS documentation's {@code AKIAIOSFODNN7EXAMPLE} / {@code ...EXAMPLEKEY} pair and the like), a
     * placeholder run of six {@code X} or {@code x} (one in 10^10 positions of random base64), and fills
     * where one character makes up half the value or more.
     */
    static boolean notDocumentedExample(String s) {
        if (s.contains("EXAMPLE") || s.contains("XXXXXX") || s.contains("xxxxxx")) {
            return false;
        }
        int n = s.length();
        if (n == 0) {
            return false;
        }
        int[] counts = new int[128];
        int max = 0;
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c < 128) {
                max = Math.max(max, ++counts[c]);
            }
        }
        return max * 2 < n || n < 4;
    }

    /** Rejects common placeholders: listed words, one or two repeated characters, variable references. */
    static boolean notPlaceholder(String s) {
        String lower = s.toLowerCase(Locale.ROOT);
        for (String w : PLACEHOLDER_WORDS) {
            if (lower.contains(w)) {
                return false;
            }
        }
        return !(s.startsWith("$") || s.startsWith("%") && s.endsWith("%") || atMostTwoDistinct(s));
    }

    private static boolean atMostTwoDistinct(String s) {
        if (s.isEmpty()) {
            return true;
        }
        char first = s.charAt(0);
        char second = first;
        for (int i = 1; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c != first && c != second) {
                if (second != first) {
                    return false;
                }
                second = c;
            }
        }
        return true;
    }

    /** A name such as {@code process.env.API_TOKEN} or {@code settings_secret_value}: letters, underscores, dots, no digit. */
    static boolean looksLikeIdentifier(String s) {
        return IDENTIFIER.matcher(s).matches();
    }

    /**
     * A code expression rather than a value: operators ({@code ||}, {@code &&}, {@code =>}, {@code ?.},
     * ...), a call, environment look-ups, or member access such as {@code e.apiKey} /
     * {@code this.config.token} (identifiers joined by dots, at most three digits in all).
     */
    static boolean looksLikeCode(String s) {
        for (String m : CODE_MARKERS) {
            if (s.contains(m)) {
                return true;
            }
        }
        if (MEMBER_ACCESS.matcher(s).matches()) {
            int digits = 0;
            for (int i = 0; i < s.length(); i++) {
                if (s.charAt(i) >= '0' && s.charAt(i) <= '9') {
                    digits++;
                }
            }
            return digits <= 3;
        }
        return false;
    }

    /**
     * Values that are public or not secrets at all: UUIDs, hash and integrity strings
     * ({@code sha256:...}, {@code sha512-...}, image digests), data URLs ({@code data:image/png;base64,...}).
     */
    static boolean looksPublic(String s) {
        return UUID.matcher(s).matches() || HASH_PREFIX.matcher(s).matches() || s.contains("@sha256:")
                || s.regionMatches(true, 0, "data:", 0, 5);
    }

    /** Answers whether {@code s} has at least one character of {@code min} of: upper case, lower case, digit, other. */
    static boolean classes(String s, int min) {
        boolean upper = false;
        boolean lower = false;
        boolean digit = false;
        boolean other = false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c >= 'A' && c <= 'Z') {
                upper = true;
            } else if (c >= 'a' && c <= 'z') {
                lower = true;
            } else if (c >= '0' && c <= '9') {
                digit = true;
            } else {
                other = true;
            }
        }
        return (upper ? 1 : 0) + (lower ? 1 : 0) + (digit ? 1 : 0) + (other ? 1 : 0) >= min;
    }

    /**
     * The gate of the prefix-less detectors: not a placeholder, identifier, code expression or public
     * value, and at least two character classes.
     */
    static boolean plausibleSecret(String s) {
        return notPlaceholder(s) && !looksLikeIdentifier(s) && !looksLikeCode(s) && !looksPublic(s) && classes(s, 2);
    }

    /**
     * Answers whether {@code s} is standard base64 (RFC 4648 section 4) of printable text shaped
     * {@code user:password} (a colon, not first, a password of at least one character): HTTP Basic
     * credentials (RFC 7617) and Docker {@code auths} entries.
     */
    static boolean base64UserPassword(String s) {
        byte[] b;
        try {
            b = Base64.getDecoder().decode(s);
        } catch (IllegalArgumentException e) {
            return false;
        }
        int colon = -1;
        for (int i = 0; i < b.length; i++) {
            int c = b[i] & 0xff;
            if (c < 0x20 || c == 0x7f) {
                return false;
            }
            if (c == ':' && colon < 0) {
                colon = i;
            }
        }
        if (colon <= 0 || colon == b.length - 1) {
            return false;
        }
        String password = new String(b, colon + 1, b.length - colon - 1, StandardCharsets.UTF_8);
        return notPlaceholder(password) && notDocumentedExample(password);
    }
}
