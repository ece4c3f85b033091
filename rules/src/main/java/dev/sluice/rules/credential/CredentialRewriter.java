package dev.sluice.rules.credential;

import dev.sluice.rules.policy.Credential;
import java.io.ByteArrayOutputStream;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The credential decision for one request head (pure: no I/O): swaps the extension's placeholders for
 * the real values where its policy allows it, then refuses the request if any placeholder shape is
 * left anywhere in the head, raw, percent-encoded (RFC 3986 section 2.1), JSON-escaped ({@code &#92;uXXXX}
 * escapes, RFC 8259 section 7) or inside base64 (RFC 4648, as in a Basic {@code Authorization},
 * RFC 7617).
 *
 * <p>A placeholder is swapped only when all hold: the leg is intercepted (the upstream certificate is
 * verified), the placeholder is the requesting extension's own, the request's host, port and path are
 * under the credential's {@code inject}, and it sits where {@code inject} says: the value of a listed
 * header (anywhere in it), the user or password of a Basic {@code Authorization} ({@code basic}), or
 * the whole value of a listed query parameter ({@code query}).
 */
public final class CredentialRewriter {

    /** What the rewriter decided. */
    public enum Outcome {
        /** No placeholder anywhere: forward the head as it is. */
        PASS,
        /** Placeholders were swapped: forward {@link Result#headers()} and {@link Result#uri()}. */
        REWRITTEN,
        /** A placeholder is where it may not be: 403 {@code credential_host_mismatch}, forward nothing. */
        MISMATCH,
        /** A placeholder may be swapped but its value cannot be read: 503 {@code credential_unavailable}. */
        UNAVAILABLE
    }

    /**
     * @param outcome what to do
     * @param headers the head's fields after the swap (REWRITTEN), else the input
     * @param uri the request-target after the swap (REWRITTEN), else the input
     * @param injected the names of the credentials swapped in, in order (REWRITTEN)
     * @param credential the credential refused (MISMATCH, UNAVAILABLE): its name, or {@code unknown}
     * @param detail where it was found, for the audit record (never a value)
     */
    public record Result(Outcome outcome, List<Map.Entry<String, String>> headers, String uri, List<String> injected,
                         String credential, String detail) {
    }

    private static final Pattern BASE64_RUN = Pattern.compile("[A-Za-z0-9+/_-]{24,}={0,2}");
    private static final Pattern SHAPE = Placeholders.SHAPE;

    private CredentialRewriter() {
    }

    /**
     * Decides one request head.
     *
     * @param table the policy's placeholders
     * @param extension the requesting extension, or null when unidentified
     * @param intercepted whether this request travels on an intercepted, certificate-verified leg
     * @param host the canonical host of the request
     * @param port its port
     * @param uri the origin-form request-target (path and query)
     * @param headers the head's fields, in order
     * @param values the current value of a credential by name, or null when it is unavailable
     * @return the decision; never null
     */
    public static Result decide(PlaceholderTable table, String extension, boolean intercepted, String host, int port,
                                String uri, List<Map.Entry<String, String>> headers, Function<String, String> values) {
        if (!mayContain(uri, headers)) {
            return new Result(Outcome.PASS, headers, uri, List.of(), null, null);
        }
        Set<String> injected = new LinkedHashSet<>();
        List<Map.Entry<String, String>> out = headers;
        String newUri = uri;
        Map<String, PlaceholderTable.Grant> grants = intercepted ? table.grants(extension) : Map.of();
        if (!grants.isEmpty()) {
            List<PlaceholderTable.Grant> inBounds = new ArrayList<>();
            for (PlaceholderTable.Grant g : grants.values()) {
                if (g.credential().inject().covers(host, port, uri)) {
                    inBounds.add(g);
                }
            }
            if (!inBounds.isEmpty()) {
                out = new ArrayList<>(headers.size());
                for (Map.Entry<String, String> h : headers) {
                    String name = h.getKey().toLowerCase(Locale.ROOT);
                    String value = h.getValue();
                    for (PlaceholderTable.Grant g : inBounds) {
                        Credential.Inject inject = g.credential().inject();
                        if (inject.headers().contains(name) && value.contains(g.placeholder())) {
                            String real = values.apply(g.credential().name());
                            if (real == null) {
                                return refusal(Outcome.UNAVAILABLE, headers, uri, g.credential().name(), "header " + name);
                            }
                            value = value.replace(g.placeholder(), real);
                            injected.add(g.credential().name());
                        } else if (inject.basic() && name.equals("authorization")) {
                            String swapped = swapBasic(value, g.placeholder(), g.credential().name(), values);
                            if (swapped == UNAVAILABLE_MARK) {
                                return refusal(Outcome.UNAVAILABLE, headers, uri, g.credential().name(), "basic");
                            }
                            if (swapped != null) {
                                value = swapped;
                                injected.add(g.credential().name());
                            }
                        }
                    }
                    out.add(new AbstractMap.SimpleImmutableEntry<>(h.getKey(), value));
                }
                int q = uri.indexOf('?');
                if (q >= 0) {
                    StringBuilder rebuilt = new StringBuilder(uri.length() + 64).append(uri, 0, q + 1);
                    String[] params = uri.substring(q + 1).split("&", -1);
                    for (int i = 0; i < params.length; i++) {
                        String param = params[i];
                        int eq = param.indexOf('=');
                        if (eq > 0) {
                            String pname = percentDecode(param.substring(0, eq));
                            String pvalue = percentDecode(param.substring(eq + 1));
                            for (PlaceholderTable.Grant g : inBounds) {
                                if (g.credential().inject().query().contains(pname) && pvalue.equals(g.placeholder())) {
                                    String real = values.apply(g.credential().name());
                                    if (real == null) {
                                        return refusal(Outcome.UNAVAILABLE, headers, uri, g.credential().name(),
                                                "query " + pname);
                                    }
                                    param = param.substring(0, eq + 1) + URLEncoder.encode(real, StandardCharsets.UTF_8);
                                    injected.add(g.credential().name());
                                }
                            }
                        }
                        rebuilt.append(i == 0 ? "" : "&").append(param);
                    }
                    newUri = rebuilt.toString();
                }
            }
        }
        // Anything left is refused, whatever its encoding.
        String left = find(newUri);
        String where = "request-target";
        if (left == null) {
            for (Map.Entry<String, String> h : out) {
                left = find(h.getKey() + ": " + h.getValue());
                if (left != null) {
                    where = "header " + h.getKey().toLowerCase(Locale.ROOT);
                    break;
                }
            }
        }
        if (left != null) {
            String name = table.lookup(left.toLowerCase(Locale.ROOT))
                    .map(g -> g.credential().name()).orElse("unknown");
            String why = !intercepted ? "on a leg Sluice does not intercept"
                    : table.lookup(left.toLowerCase(Locale.ROOT)).map(g -> !g.extension().equals(extension)
                            ? "from an extension not granted it"
                            : g.credential().inject().covers(host, port, uri) ? "where inject does not allow it"
                            : "to a host, port or path outside inject").orElse("not one this policy hands out");
            return refusal(Outcome.MISMATCH, headers, uri, name, "placeholder in " + where + " " + why);
        }
        if (injected.isEmpty()) {
            return new Result(Outcome.PASS, headers, uri, List.of(), null, null);
        }
        return new Result(Outcome.REWRITTEN, out, newUri, List.copyOf(injected), null, null);
    }

    /**
     * Decides one request body, held whole (after the head was decided): swaps the extension's raw
     * placeholders where the credential's {@code inject.body} allows it — in a JSON body (RFC 8259) as a
     * JSON-escaped value, in an {@code application/x-www-form-urlencoded} body as a percent-encoded one —
     * then refuses any placeholder shape left, in any encoding {@link #find} knows.
     *
     * @param contentType the request's {@code Content-Type}, or null
     * @param body the body's bytes as ISO-8859-1 characters (one char per byte), identity-coded
     * @return the decision; {@link Result#uri()} carries the new body (REWRITTEN), {@code headers} is null
     */
    public static Result decideBody(PlaceholderTable table, String extension, boolean intercepted, String host,
                                    int port, String uri, String contentType, String body,
                                    Function<String, String> values) {
        String type = contentType == null ? "" : contentType.toLowerCase(Locale.ROOT);
        boolean json = type.contains("json");
        boolean form = type.startsWith("application/x-www-form-urlencoded");
        Set<String> injected = new LinkedHashSet<>();
        String out = body;
        if (intercepted && (json || form) && containsIgnoreCase(body, Placeholders.PREFIX)) {
            for (PlaceholderTable.Grant g : table.grants(extension).values()) {
                Credential.Inject inject = g.credential().inject();
                if (!inject.body() || !inject.covers(host, port, uri) || !out.contains(g.placeholder())) {
                    continue;
                }
                String real = values.apply(g.credential().name());
                if (real == null) {
                    return refusal(Outcome.UNAVAILABLE, null, uri, g.credential().name(), "body");
                }
                String encoded = json ? jsonEscape(real) : URLEncoder.encode(real, StandardCharsets.UTF_8);
                out = out.replace(g.placeholder(),
                        new String(encoded.getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1));
                injected.add(g.credential().name());
            }
        }
        String left = find(out);
        if (left != null) {
            String name = table.lookup(left.toLowerCase(Locale.ROOT)).map(g -> g.credential().name()).orElse("unknown");
            return refusal(Outcome.MISMATCH, null, uri, name, "placeholder in the request body where it may not be");
        }
        if (injected.isEmpty()) {
            return new Result(Outcome.PASS, null, body, List.of(), null, null);
        }
        return new Result(Outcome.REWRITTEN, null, out, List.copyOf(injected), null, null);
    }

    private static String jsonEscape(String s) {
        StringBuilder b = new StringBuilder(s.length() + 8);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    private static Result refusal(Outcome outcome, List<Map.Entry<String, String>> headers, String uri,
                                  String credential, String detail) {
        return new Result(outcome, headers, uri, List.of(), credential, detail);
    }

    private static final String UNAVAILABLE_MARK = new String("unavailable");

    /** Swaps the placeholder in a Basic value's user or password; null when it has none. */
    private static @Nullable String swapBasic(String value, String placeholder, String credential, Function<String, String> values) {
        if (value.length() < 6 || !value.regionMatches(true, 0, "Basic ", 0, 6)) {
            return null;
        }
        String decoded;
        try {
            decoded = new String(Base64.getDecoder().decode(value.substring(6).trim()), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return null;
        }
        int colon = decoded.indexOf(':');
        if (colon < 0) {
            return null;
        }
        String user = decoded.substring(0, colon);
        String pass = decoded.substring(colon + 1);
        if (!user.equals(placeholder) && !pass.equals(placeholder)) {
            return null;
        }
        String real = values.apply(credential);
        if (real == null) {
            return UNAVAILABLE_MARK;
        }
        String swapped = (user.equals(placeholder) ? real : user) + ":" + (pass.equals(placeholder) ? real : pass);
        return "Basic " + Base64.getEncoder().encodeToString(swapped.getBytes(StandardCharsets.UTF_8));
    }

    /** Cheap first look: could a placeholder hide in this head at all (any encoding)? */
    private static boolean mayContain(String uri, List<Map.Entry<String, String>> headers) {
        if (suspicious(uri)) {
            return true;
        }
        for (Map.Entry<String, String> h : headers) {
            if (suspicious(h.getValue()) || suspicious(h.getKey())) {
                return true;
            }
        }
        return false;
    }

    private static boolean suspicious(String s) {
        // raw or escaped text has "sluice" or an escape; base64 hides it in a long run, checked by find()
        return containsIgnoreCase(s, "sluice") || s.indexOf('%') >= 0 || s.indexOf('\\') >= 0
                || hasBase64Run(s);
    }

    /**
     * Whether {@code s} has a run of 24 or more base64 characters (either alphabet): what
     * {@code BASE64_RUN.matcher(s).find()} answers, without a matcher per header value.
     */
    static boolean hasBase64Run(String s) {
        int run = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                    || c == '+' || c == '/' || c == '_' || c == '-') {
                if (++run >= 24) {
                    return true;
                }
            } else {
                run = 0;
            }
        }
        return false;
    }

    /**
     * Returns the first placeholder shape found in {@code text}, raw, percent-decoded, JSON-unescaped, or
     * base64-decoded (also after one of the other decodings), or null.
     *
     * @param text any text of a request (a header line, a request-target, a body piece)
     */
    public static @Nullable String find(String text) {
        List<String> forms = new ArrayList<>(4);
        forms.add(text);
        if (text.indexOf('%') >= 0) {
            forms.add(percentDecode(text));
        }
        if (text.indexOf('\\') >= 0) {
            forms.add(jsonUnescape(text));
        }
        if (text.indexOf('+') >= 0) {
            forms.add(text.replace('+', ' '));
        }
        for (String form : forms) {
            Matcher m = SHAPE.matcher(form);
            if (m.find()) {
                return m.group();
            }
            Matcher b = BASE64_RUN.matcher(form);
            while (b.find()) {
                String decoded = base64(b.group());
                if (decoded != null) {
                    Matcher inner = SHAPE.matcher(decoded);
                    if (inner.find()) {
                        return inner.group();
                    }
                }
            }
        }
        return null;
    }

    private static @Nullable String base64(String run) {
        String s = run.replace('-', '+').replace('_', '/');
        int end = s.indexOf('=');
        String body = end < 0 ? s : s.substring(0, end);
        // try each of the 3 alignments of a run that may start mid-token
        for (int skip = 0; skip < 4 && skip < body.length(); skip++) {
            String part = body.substring(skip);
            part = part.substring(0, part.length() - (part.length() % 4 == 1 ? 1 : 0));
            try {
                String decoded = new String(Base64.getDecoder().decode(pad(part)), StandardCharsets.ISO_8859_1);
                if (containsIgnoreCase(decoded, "sluice-cred-")) {
                    return decoded;
                }
            } catch (IllegalArgumentException e) {
                // not base64 at this alignment
            }
        }
        return null;
    }

    private static String pad(String s) {
        int r = s.length() % 4;
        return r == 0 ? s : s + "==".substring(0, 4 - r);
    }

    private static boolean containsIgnoreCase(String s, String needle) {
        int n = needle.length();
        for (int i = 0; i + n <= s.length(); i++) {
            if (s.regionMatches(true, i, needle, 0, n)) {
                return true;
            }
        }
        return false;
    }

    /** Decodes every {@code %XX} (leniently: a bad escape stays), as UTF-8; repeated for double encoding. */
    static String percentDecode(String s) {
        String current = s;
        for (int round = 0; round < 3 && current.indexOf('%') >= 0; round++) {
            ByteArrayOutputStream out = new ByteArrayOutputStream(current.length());
            for (int i = 0; i < current.length(); i++) {
                char c = current.charAt(i);
                if (c == '%' && i + 2 < current.length()
                        && hex(current.charAt(i + 1)) >= 0 && hex(current.charAt(i + 2)) >= 0) {
                    out.write(hex(current.charAt(i + 1)) * 16 + hex(current.charAt(i + 2)));
                    i += 2;
                } else {
                    byte[] b = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
                    out.write(b, 0, b.length);
                }
            }
            current = out.toString(StandardCharsets.UTF_8);
        }
        return current;
    }

    /** Undoes JSON string escapes (backslash-u, {@code \\/} and the one-letter ones). */
    static String jsonUnescape(String s) {
        StringBuilder out = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && i + 1 < s.length()) {
                char n = s.charAt(i + 1);
                if (n == 'u' && i + 5 < s.length() && hex(s.charAt(i + 2)) >= 0 && hex(s.charAt(i + 3)) >= 0
                        && hex(s.charAt(i + 4)) >= 0 && hex(s.charAt(i + 5)) >= 0) {
                    out.append((char) Integer.parseInt(s.substring(i + 2, i + 6), 16));
                    i += 5;
                    continue;
                }
                if (n == '/' || n == '\\' || n == '"' || n == '-') {
                    out.append(n);
                    i++;
                    continue;
                }
            }
            out.append(c);
        }
        return out.toString();
    }

    private static int hex(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        c = Character.toLowerCase(c);
        return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    }
}
