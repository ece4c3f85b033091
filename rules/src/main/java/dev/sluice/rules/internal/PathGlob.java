package dev.sluice.rules.internal;

import org.jspecify.annotations.Nullable;

/**
 * Path globs of policy rules. Not public API.
 *
 * <p>A glob starts with {@code /} and is split into segments at {@code /}. A segment {@code **} matches
 * zero or more whole segments; {@code *} inside a segment matches any run of characters other than
 * {@code /} (so a segment {@code *} matches exactly one segment); every other character matches itself,
 * case-sensitively. {@code **} must be a whole segment.
 *
 * <p>Paths that could be read differently upstream never match a path glob: dot segments
 * ({@code .}, {@code ..}, also with path parameters, {@code ..;x}, which servlet containers read as
 * {@code ..}), percent-encoded dot, slash, backslash or NUL ({@code %2e %2f %5c %00}, any case), and
 * backslashes. So {@code /@scope/../evil} and {@code /@scope/..;/evil} do not match {@code /@scope/**}.
 *
 * <p>Deny rules also use {@link #matchesLoosely}: the forms an origin may fold into the same path
 * (percent-encoded unreserved characters, repeated slashes, {@code ;} path parameters, letter case)
 * match too, so {@code /%61dmin/x}, {@code //admin/x}, {@code /admin;v=1/x} and {@code /ADMIN/x} are
 * denied where {@code /admin/**} is.
 */
public final class PathGlob {

    private PathGlob() {
    }

    /**
     * Checks a glob's syntax.
     *
     * @return null when valid, else a message in the form {@code (expected: ...)}
     */
    public static @Nullable String validate(String glob) {
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
                if ((h == '2' && (l == 'e' || l == 'f')) || (h == '5' && l == 'c') || (h == '0' && l == '0')) {
                    return true;
                }
            }
            pct = path.indexOf('%', pct + 1);
        }
        for (String segment : splitSegments(path)) {
            String bare = withoutParameters(segment);
            if (bare.equals(".") || bare.equals("..")) {
                return true;
            }
        }
        return false;
    }

    /**
     * Answers whether {@code path} (no query) matches {@code glob} in any form an origin may read it as:
     * {@link #matches} on the path, or on the path with percent-encoded unreserved characters decoded
     * (RFC 3986 section 2.3), repeated slashes collapsed, {@code ;} parameters cut from every segment,
     * and glob and path compared without letter case. For deny rules: a miss here means no plausible
     * reading of the path is the denied one.
     */
    public static boolean matchesLoosely(String glob, String path) {
        if (matches(glob, path)) {
            return true;
        }
        String loose = loosen(path).toLowerCase(java.util.Locale.ROOT);
        return matchSegments(splitSegments(glob.toLowerCase(java.util.Locale.ROOT)), 0, splitSegments(loose), 0);
    }

    private static String loosen(String path) {
        StringBuilder decoded = new StringBuilder(path.length());
        for (int i = 0; i < path.length(); i++) {
            char c = path.charAt(i);
            if (c == '%' && i + 2 < path.length()) {
                int v = hex(path.charAt(i + 1)) * 16 + hex(path.charAt(i + 2));
                if (v >= 0 && isUnreserved((char) v)) {
                    decoded.append((char) v);
                    i += 2;
                    continue;
                }
            }
            decoded.append(c);
        }
        StringBuilder out = new StringBuilder(decoded.length());
        for (String segment : splitSegments(decoded.toString())) {
            if (segment.isEmpty() && out.length() > 0) {
                continue; // "//" reads as "/" on many origins
            }
            if (out.length() > 0 || !segment.isEmpty()) {
                out.append('/');
            }
            out.append(withoutParameters(segment));
        }
        String result = out.length() == 0 || out.charAt(0) != '/' ? "/" + out : out.toString();
        // A trailing empty segment ("/a/") was dropped by the collapse above; keep it.
        return path.endsWith("/") && !result.endsWith("/") ? result + "/" : result;
    }

    private static String withoutParameters(String segment) {
        int semicolon = segment.indexOf(';');
        return semicolon < 0 ? segment : segment.substring(0, semicolon);
    }

    private static boolean isUnreserved(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                || c == '-' || c == '.' || c == '_' || c == '~';
    }

    private static int hex(char c) {
        int v = Character.digit(c, 16);
        return v < 0 ? -1000 : v;
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
