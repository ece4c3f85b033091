package dev.sluice.rules.target;

import org.jspecify.annotations.Nullable;
import dev.sluice.hosts.IpAddresses;
import java.net.IDN;
import java.util.Locale;

/**
 * Parses request-targets and hosts into canonical {@link Target}s. Never resolves a name.
 *
 * <p>Canonical form (design.md step 3):
 * <ul>
 *   <li>IDNA to ASCII with {@link java.net.IDN#toASCII(String, int)} (IDNA2003, RFC 3490, with
 *       nameprep; flags 0, so no STD3 check there): a name that cannot be converted is malformed. Full
 *       stops U+3002, U+FF0E and U+FF61 separate labels like {@code .}, and nameprep's NFKC mapping turns
 *       full-width digits into ASCII ones (so they are then read as an IP literal). IDNA2008/UTS #46
 *       differ for a few characters (e.g. {@code ß} maps to {@code ss} here);</li>
 *   <li>lowercase ASCII; one trailing dot dropped, two or more are malformed;</li>
 *   <li>each label 1..63 characters of {@code a-z 0-9 - _} (RFC 1123 LDH, plus the underscore that
 *       real service names use; a label may start or end with {@code -} or {@code _} since clients and
 *       resolvers accept those), the whole name at most 253 characters. Anything else (space, {@code %},
 *       {@code @}, {@code :}, {@code /}, {@code \}, control characters) is malformed;</li>
 *   <li>IPv4 literals in every inet_aton(3) spelling, as curl, glibc and the WHATWG URL standard read
 *       them: 1 to 4 parts, each decimal, octal with a leading {@code 0}, or hex with {@code 0x}. So
 *       {@code 2852039166}, {@code 169.254.43518}, {@code 0251.0376.0251.0376} and
 *       {@code 0xa9.0xfe.0xa9.0xfe} all read as 169.254.169.254, {@code 0177.0.0.1}, {@code 127.1} and
 *       {@code 0x7f.1} as 127.0.0.1;</li>
 *   <li>a name whose last label is numeric (all digits, or {@code 0x} and hex digits — the WHATWG
 *       "ends in a number" rule) but that is not a valid IPv4 address is malformed, never sent to
 *       DNS (e.g. {@code 1.2.3.4.5}, {@code 256.1.1.1}, {@code example.0x1});</li>
 *   <li>IPv6 only inside brackets in authority-form and absolute-form (RFC 3986 {@code IP-literal});
 *       zone ids ({@code %25eth0}, {@code %eth0}) and IPvFuture are refused; the canonical text is
 *       RFC 5952 (compressed, lowercase), without brackets in {@link Target#host()}, and an IPv4-mapped
 *       address stays IPv6 ({@code ::ffff:127.0.0.1}, RFC 5952 section 5) so that the address
 *       classifier sees it as what it is.</li>
 * </ul>
 *
 * <p>Messages of {@link MalformedTargetException} never contain userinfo: a target with {@code @} in its
 * authority is refused before anything of it is quoted, and quoted hosts are cut to 64 printable ASCII
 * characters.
 */
public final class TargetParser {

    private static final int MAX_NAME_LENGTH = 253;
    private static final int MAX_LABEL_LENGTH = 63;

    private TargetParser() {
    }

    /**
     * Parses an authority-form request-target of a CONNECT request ({@code host:port}, RFC 9112
     * section 3.2.3), e.g. {@code api.github.com:443} or {@code [2001:db8::1]:443}. The port is required
     * (1..65535, ASCII digits only); an IPv6 literal must be in brackets; spaces, control characters and
     * non-ASCII characters (a client sends IDNA A-labels) are malformed.
     *
     * @throws MalformedTargetException for a missing or bad port, userinfo, a bad host
     */
    public static Target parseAuthority(@Nullable String authority) throws MalformedTargetException {
        if (authority == null || authority.isEmpty()) {
            throw new MalformedTargetException("authority: empty (expected: host:port)");
        }
        checkNoControlOrSpace(authority, "authority");
        if (authority.indexOf('@') >= 0) {
            throw new MalformedTargetException("authority: userinfo is not allowed (expected: host:port)");
        }
        int colon;
        if (authority.charAt(0) == '[') {
            int close = authority.indexOf(']');
            if (close < 0) {
                throw new MalformedTargetException("authority: unclosed '[' (expected: [ipv6]:port)");
            }
            colon = close + 1;
            if (colon >= authority.length() || authority.charAt(colon) != ':') {
                throw new MalformedTargetException("authority: " + quoteAuthority(authority)
                        + ": missing port (expected: host:port)");
            }
        } else {
            if (authority.contains("://") || authority.indexOf('/') >= 0) {
                throw new MalformedTargetException("authority: " + quoteAuthority(authority)
                        + ": a URL, not an authority (expected: host:port)");
            }
            colon = authority.lastIndexOf(':');
            if (colon < 0) {
                throw new MalformedTargetException("authority: " + quoteAuthority(authority)
                        + ": missing port (expected: host:port)");
            }
            if (authority.lastIndexOf(':', colon - 1) >= 0) {
                throw new MalformedTargetException("authority: " + quoteAuthority(authority)
                        + ": IPv6 literal without brackets (expected: [ipv6]:port)");
            }
        }
        String host = authority.substring(0, colon);
        int port = parsePort(authority.substring(colon + 1), false);
        return canonical(host, port, false);
    }

    /**
     * Parses an absolute-form request-target ({@code http://host[:port]/path?query}, RFC 9112 section
     * 3.2.2, RFC 3986 section 3). Only the {@code http} scheme is accepted (case-insensitive); userinfo is
     * refused as malformed (never silently dropped, so {@code http://allowed.com@evil.com/} can never be
     * read as either host); the default port is 80 (an empty port, {@code host:}, too); an empty path
     * becomes {@code /}; the fragment is dropped. Spaces, control characters and non-ASCII characters
     * anywhere are malformed.
     *
     * @return the canonical target and the origin-form ({@code path?query}) to send upstream
     * @throws MalformedTargetException for any other shape, including origin-form and {@code https}
     */
    public static HttpTarget parseAbsoluteForm(@Nullable String requestTarget) throws MalformedTargetException {
        if (requestTarget == null || requestTarget.isEmpty()) {
            throw new MalformedTargetException("request-target: empty (expected: http://host[:port]/path)");
        }
        checkNoControlOrSpace(requestTarget, "request-target");
        int schemeEnd = requestTarget.indexOf("://");
        if (schemeEnd < 0) {
            throw new MalformedTargetException("request-target: not absolute-form (expected: http://host[:port]/path)");
        }
        String scheme = requestTarget.substring(0, schemeEnd).toLowerCase(Locale.ROOT);
        if (!scheme.equals("http")) {
            throw new MalformedTargetException("request-target: scheme " + quote(scheme) + " (expected: http)");
        }
        int authStart = schemeEnd + 3;
        int authEnd = authStart;
        while (authEnd < requestTarget.length()) {
            char c = requestTarget.charAt(authEnd);
            if (c == '/' || c == '?' || c == '#') {
                break;
            }
            authEnd++;
        }
        String authority = requestTarget.substring(authStart, authEnd);
        if (authority.indexOf('@') >= 0) {
            throw new MalformedTargetException("request-target: userinfo is not allowed");
        }
        if (authority.isEmpty()) {
            throw new MalformedTargetException("request-target: empty host (expected: http://host[:port]/path)");
        }
        String host;
        int port = 80;
        int colon;
        if (authority.charAt(0) == '[') {
            int close = authority.indexOf(']');
            if (close < 0) {
                throw new MalformedTargetException("request-target: unclosed '[' (expected: [ipv6])");
            }
            colon = close + 1 < authority.length() ? close + 1 : -1;
            if (colon >= 0 && authority.charAt(colon) != ':') {
                throw new MalformedTargetException("request-target: " + quoteAuthority(authority)
                        + ": junk after ']' (expected: [ipv6]:port)");
            }
        } else {
            colon = authority.indexOf(':');
            if (colon >= 0 && authority.indexOf(':', colon + 1) >= 0) {
                throw new MalformedTargetException("request-target: " + quoteAuthority(authority)
                        + ": IPv6 literal without brackets (expected: [ipv6])");
            }
        }
        if (colon >= 0) {
            host = authority.substring(0, colon);
            port = parsePort(authority.substring(colon + 1), true);
        } else {
            host = authority;
        }
        Target target = canonical(host, port, false);

        String rest = requestTarget.substring(authEnd);
        int hash = rest.indexOf('#');
        if (hash >= 0) {
            rest = rest.substring(0, hash);
        }
        String pathAndQuery;
        if (rest.isEmpty()) {
            pathAndQuery = "/";
        } else if (rest.charAt(0) == '?') {
            pathAndQuery = "/" + rest;
        } else {
            pathAndQuery = rest;
        }
        return new HttpTarget("http", target, pathAndQuery);
    }

    /**
     * Canonicalises a bare host (no port): a DNS name, an IPv4 literal in any inet_aton spelling, or
     * an IPv6 literal with or without brackets (e.g. from a TLS SNI or a Host header already split from
     * its port, or a policy file).
     *
     * @param port the port to put in the target, 1..65535
     * @return the target with the given port
     * @throws MalformedTargetException when the host cannot be canonicalised, or the port is out of range
     */
    public static Target canonicalHost(@Nullable String host, int port) throws MalformedTargetException {
        if (host == null) {
            throw new MalformedTargetException("host: missing (expected: a host name or IP literal)");
        }
        if (port < 1 || port > 65535) {
            throw new MalformedTargetException("port: " + port + " (expected: 1..65535)");
        }
        checkNoControlOrSpace(host, "host");
        if (host.indexOf('@') >= 0) {
            throw new MalformedTargetException("host: userinfo is not allowed");
        }
        return canonical(host, port, true);
    }

    private static Target canonical(String host, int port, boolean bareIpv6Allowed) throws MalformedTargetException {
        if (host.isEmpty()) {
            throw new MalformedTargetException("host: empty (expected: a host name or IP literal)");
        }
        if (host.charAt(0) == '[') {
            if (host.charAt(host.length() - 1) != ']') {
                throw new MalformedTargetException("host: " + quote(host) + ": unclosed '['");
            }
            return ipv6(host.substring(1, host.length() - 1), port);
        }
        if (host.indexOf(':') >= 0) {
            if (!bareIpv6Allowed) {
                throw new MalformedTargetException("host: " + quote(host) + ": IPv6 literal without brackets");
            }
            return ipv6(host, port);
        }
        return name(host, port);
    }

    private static Target ipv6(String text, int port) throws MalformedTargetException {
        if (text.indexOf('%') >= 0) {
            throw new MalformedTargetException("host: IPv6 zone ids are not allowed");
        }
        if (!text.isEmpty() && (text.charAt(0) == 'v' || text.charAt(0) == 'V')) {
            throw new MalformedTargetException("host: IPvFuture literals are not supported");
        }
        byte[] bytes = IpAddresses.parseIpv6(text);
        if (bytes == null) {
            throw new MalformedTargetException("host: " + quote(text) + ": not an IPv6 address (RFC 4291 section 2.2)");
        }
        return new Target(IpAddresses.formatIpv6(bytes), port, IpAddresses.inet6(bytes));
    }

    private static Target name(String host, int port) throws MalformedTargetException {
        if (host.endsWith("..")) {
            throw new MalformedTargetException("host: " + quote(host) + ": more than one trailing dot");
        }
        String ascii;
        if (isPlainAscii(host)) {
            // IDN.toASCII leaves all-ASCII labels as they are (RFC 3490 section 4.1 steps 2 and 3 apply
            // to non-ASCII labels and STD3 rules only; lengths are checked below), so skip it
            ascii = host;
        } else {
            try {
                ascii = IDN.toASCII(host, 0);
            } catch (IllegalArgumentException e) {
                throw new MalformedTargetException("host: " + quote(host) + ": not convertible to IDNA ASCII");
            }
        }
        ascii = ascii.toLowerCase(Locale.ROOT);
        if (ascii.endsWith(".")) {
            ascii = ascii.substring(0, ascii.length() - 1);
            if (ascii.endsWith(".")) {
                throw new MalformedTargetException("host: " + quote(host) + ": more than one trailing dot");
            }
        }
        if (ascii.isEmpty()) {
            throw new MalformedTargetException("host: empty (expected: a host name or IP literal)");
        }
        if (ascii.length() > MAX_NAME_LENGTH) {
            throw new MalformedTargetException("host: " + ascii.length() + " characters (expected: at most 253)");
        }
        int labelStart = 0;
        int lastLabelStart = 0;
        for (int i = 0; i <= ascii.length(); i++) {
            char c = i < ascii.length() ? ascii.charAt(i) : '.';
            if (c == '.') {
                int labelLength = i - labelStart;
                if (labelLength == 0) {
                    throw new MalformedTargetException("host: " + quote(ascii) + ": empty label");
                }
                if (labelLength > MAX_LABEL_LENGTH) {
                    throw new MalformedTargetException("host: " + quote(ascii) + ": label longer than 63 characters");
                }
                if (ascii.charAt(labelStart) == '-' || ascii.charAt(i - 1) == '-') {
                    // RFC 1123 section 2.1 (and RFC 5280's preferred name syntax for a leaf's SAN)
                    throw new MalformedTargetException("host: " + quote(ascii) + ": label starts or ends with '-'");
                }
                if (labelLength > 4 && ascii.startsWith("xn--", labelStart)) {
                    String label = ascii.substring(labelStart, i);
                    if (IDN.toUnicode(label, 0).equals(label)) {
                        throw new MalformedTargetException("host: " + quote(ascii) + ": bad IDNA A-label");
                    }
                } else if (labelLength == 4 && ascii.startsWith("xn--", labelStart)) {
                    throw new MalformedTargetException("host: " + quote(ascii) + ": bad IDNA A-label");
                }
                lastLabelStart = labelStart;
                labelStart = i + 1;
            } else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) {
                throw new MalformedTargetException("host: " + quote(ascii)
                        + ": character " + describe(c) + " (expected: letters, digits, '-', '_', '.')");
            }
        }
        if (isNumericLabel(ascii, lastLabelStart)) {
            long v4 = IpAddresses.parseInetAton(ascii);
            if (v4 < 0) {
                throw new MalformedTargetException("host: " + quote(ascii)
                        + ": ends in a number but is not an IPv4 address");
            }
            int v = (int) v4;
            return new Target(IpAddresses.formatIpv4(v), port, IpAddresses.inet4(v));
        }
        return new Target(ascii, port, null);
    }

    private static boolean isPlainAscii(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'
                    || c == '.')) {
                return false;
            }
        }
        return true;
    }

    /** WHATWG URL "ends in a number": the last label is all digits, or 0x followed by hex digits. */
    private static boolean isNumericLabel(String s, int start) {
        boolean allDigits = true;
        for (int i = start; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                allDigits = false;
                break;
            }
        }
        if (allDigits) {
            return true;
        }
        if (s.length() - start >= 2 && s.charAt(start) == '0' && s.charAt(start + 1) == 'x') {
            for (int i = start + 2; i < s.length(); i++) {
                if (Character.digit(s.charAt(i), 16) < 0) {
                    return false;
                }
            }
            return true;
        }
        return false;
    }

    private static int parsePort(String text, boolean emptyMeansDefault) throws MalformedTargetException {
        if (text.isEmpty()) {
            if (emptyMeansDefault) {
                return 80;
            }
            throw new MalformedTargetException("port: empty (expected: 1..65535)");
        }
        if (text.length() > 5) {
            throw new MalformedTargetException("port: " + text.length() + " characters (expected: 1..65535)");
        }
        int port = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') {
                // not quoted: a URL written user:secret without its @host puts the secret here
                throw new MalformedTargetException("port: not a number (expected: 1..65535)");
            }
            port = port * 10 + (c - '0');
        }
        if (port < 1 || port > 65535) {
            throw new MalformedTargetException("port: " + port + " (expected: 1..65535)");
        }
        return port;
    }

    /**
     * Refuses spaces and control characters anywhere; outside a bare host (where IDNA input is allowed)
     * also any non-ASCII character.
     */
    private static void checkNoControlOrSpace(String s, String what) throws MalformedTargetException {
        boolean bareHost = what.equals("host");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c > 0x20 && c < 0x7f) {
                continue;
            }
            if (c <= 0x20 || c == 0x7f || Character.isWhitespace(c) || Character.isISOControl(c)) {
                throw new MalformedTargetException(what + ": contains a space or control character");
            }
            if (!bareHost) {
                throw new MalformedTargetException(what + ": contains a non-ASCII character (expected: IDNA A-labels)");
            }
        }
    }

    private static String describe(char c) {
        return c >= 0x21 && c <= 0x7e ? "'" + c + "'" : String.format(Locale.ROOT, "U+%04X", (int) c);
    }

    /** Quotes text for a message: printable ASCII only, at most 64 characters. */
    /**
     * Quotes an authority or request-target the client sent, for an error that goes to the client and the
     * audit record: up to its first {@code :} {@code /} {@code @} {@code ?} or {@code #} (the host, as
     * {@link #quote} shows it), then only how many characters follow. What follows is where a credential
     * sits in a mistyped URL ({@code http://user:TOKEN/}, {@code http://host/TOKEN} as a CONNECT
     * target), and secrets are never written to the audit log.
     */
    private static String quoteAuthority(String s) {
        int cut = 0;
        while (cut < s.length() && ":/@?#".indexOf(s.charAt(cut)) < 0) {
            cut++;
        }
        if (cut == s.length()) {
            return quote(s);
        }
        return quote(s.substring(0, cut)) + " and " + (s.length() - cut) + " more characters";
    }

    private static String quote(String s) {
        StringBuilder sb = new StringBuilder(Math.min(s.length(), 64) + 5);
        sb.append('"');
        for (int i = 0; i < s.length() && i < 64; i++) {
            char c = s.charAt(i);
            sb.append(c >= 0x20 && c <= 0x7e && c != '"' ? c : '?');
        }
        if (s.length() > 64) {
            sb.append("...");
        }
        return sb.append('"').toString();
    }
}
