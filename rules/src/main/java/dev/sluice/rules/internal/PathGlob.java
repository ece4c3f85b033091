package dev.sluice.rules.internal;

/**
 * Path globs of policy rules. Not public API.
 *
 * <p>A glob starts with {@code /} and is split into segments at {@code /}. A segment {@code **} matches
 * zero or more whole segments; {@code *} inside a segment matches any run of characters other than
 * {@code /} (so a segment {@code *} matches exactly one segment); every other character matches itself,
 * case-sensitively. {@code **} must be a whole segment.
 *
 * <p>Paths that could be read differently upstream never match a path glob: dot segments
 * ({@code .}, {@code ..}), percent-encoded dot, slash or backslash ({@code %2e %2f %5c}, any case), and
 * backslashes. So {@code /@scope/../evil} does not match {@code /@scope/**}.
 */
public final class PathGlob {

    private PathGlob() {
    }

    /**
     * Checks a glob's syntax.
     *
     * @return null when valid, else a message in the form {@code (expected: ...)}
     */
    public static String validate(String glob) {
        if (glob.isEmpty() || glob.charAt(0) != '/') {
            return "(expected: a path glob starting with /)";
        }
        for (int i = 0; i < glob.length(); i++) {
            char c = glob.charAt(i);
            if (c <= 0x20 || c >= 0x7f || c == '?' || c == '#' || c == '\\') {
                return "(expected: path characters, '*' and '**'; no space, '?', '#', '\\' or non-ASCII)";
            }
        }
        for (String segment : splitSegments(glob)) {
            if (segment.contains("**") && !segment.equals("**")) {
                return "(expected: '**' as a whole segment, e.g. /a/**/b)";
            }
            if (segment.equals(".") || segment.equals("..")) {
                return "(expected: no '.' or '..' segments)";
            }
        }
        return null;
    }

    /** Answers whether {@code path} (no query) matches {@code glob} (valid per {@link #validate}). */
    public static boolean matches(String glob, String path) {
        if (isAmbiguous(path)) {
            return false;
        }
        String[] g = splitSegments(glob);
        String[] p = splitSegments(path);
        return matchSegments(g, 0, p, 0);
    }

    /** Answers whether a path has dot segments or encoded separators, which upstream may read differently. */
    public static boolean isAmbiguous(String path) {
        if (path.isEmpty() || path.charAt(0) != '/' || path.indexOf('\\') >= 0) {
            return true;
        }
        int pct = path.indexOf('%');
        while (pct >= 0) {
            if (pct + 2 < path.length()) {
                char h = path.charAt(pct + 1);
                char l = Character.toLowerCase(path.charAt(pct + 2));
                if ((h == '2' && (l == 'e' || l == 'f')) || (h == '5' && l == 'c')) {
                    return true;
                }
            }
            pct = path.indexOf('%', pct + 1);
        }
        for (String segment : splitSegments(path)) {
            if (segment.equals(".") || segment.equals("..")) {
                return true;
            }
        }
        return false;
    }

    private static String[] splitSegments(String s) {
        // keeps empty segments (String.split would drop trailing ones)
        int count = 1;
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) == '/') {
                count++;
            }
        }
        String[] out = new String[count];
        int start = 0;
        int k = 0;
        for (int i = 0; i <= s.length(); i++) {
            if (i == s.length() || s.charAt(i) == '/') {
                out[k++] = s.substring(start, i);
                start = i + 1;
            }
        }
        return out;
    }

    private static boolean matchSegments(String[] g, int gi, String[] p, int pi) {
        while (gi < g.length) {
            if (g[gi].equals("**")) {
                if (gi == g.length - 1) {
                    return true;
                }
                for (int k = pi; k <= p.length; k++) {
                    if (matchSegments(g, gi + 1, p, k)) {
                        return true;
                    }
                }
                return false;
            }
            if (pi >= p.length || !matchSegment(g[gi], p[pi])) {
                return false;
            }
            gi++;
            pi++;
        }
        return pi == p.length;
    }

    /** Wildcard match within one segment: '*' is any run of characters. */
    private static boolean matchSegment(String g, String s) {
        int gi = 0;
        int si = 0;
        int star = -1;
        int mark = 0;
        while (si < s.length()) {
            if (gi < g.length() && g.charAt(gi) == '*') {
                star = gi++;
                mark = si;
            } else if (gi < g.length() && g.charAt(gi) == s.charAt(si)) {
                gi++;
                si++;
            } else if (star >= 0) {
                gi = star + 1;
                si = ++mark;
            } else {
                return false;
            }
        }
        while (gi < g.length() && g.charAt(gi) == '*') {
            gi++;
        }
        return gi == g.length();
    }
}
