package dev.sluice.hosts;

import org.jspecify.annotations.Nullable;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * IP literal parsing and formatting without any name resolution. Not public API: the shapes may change.
 *
 * <p>Java's {@link InetAddress#getByName} is not used for parsing because it falls back to DNS for
 * text it does not recognise, reads {@code 0177.0.0.1} as decimal, and accepts zone ids; and
 * {@link InetAddress#getByAddress(byte[])} turns a 16-byte IPv4-mapped address into an
 * {@link Inet4Address}. {@link #inet6(byte[])} keeps such an address IPv6.
 */
public final class IpAddresses {

    private IpAddresses() {
    }

    /**
     * Parses an IPv4 address the way inet_aton(3) does (glibc, curl, the WHATWG URL standard agree):
     * 1 to 4 dot-separated parts, each decimal, octal with a leading {@code 0}, or hex with
     * {@code 0x}/{@code 0X}; with n parts the last part fills the remaining 5-n bytes. Empty parts are
     * refused (the caller strips one trailing dot before).
     *
     * @return the address as an unsigned 32-bit value, or -1 when the text is not such an address
     */
    public static long parseInetAton(String text) {
        if (text.isEmpty()) {
            return -1;
        }
        long[] parts = new long[4];
        int count = 0;
        int start = 0;
        int len = text.length();
        while (true) {
            int dot = text.indexOf('.', start);
            int end = dot < 0 ? len : dot;
            if (count == 4) {
                return -1;
            }
            long v = parseAtonPart(text, start, end);
            if (v < 0) {
                return -1;
            }
            parts[count++] = v;
            if (dot < 0) {
                break;
            }
            start = dot + 1;
        }
        long result = 0;
        for (int i = 0; i < count - 1; i++) {
            if (parts[i] > 255) {
                return -1;
            }
            result |= parts[i] << (8 * (3 - i));
        }
        long last = parts[count - 1];
        long lastMax = (1L << (8 * (5 - count))) - 1;
        if (last > lastMax) {
            return -1;
        }
        return result | last;
    }

    private static long parseAtonPart(String s, int start, int end) {
        if (start >= end) {
            return -1;
        }
        int radix = 10;
        int i = start;
        if (end - start >= 2 && s.charAt(start) == '0' && (s.charAt(start + 1) == 'x' || s.charAt(start + 1) == 'X')) {
            radix = 16;
            i += 2;
            if (i == end) {
                return -1; // "0x" alone
            }
        } else if (end - start >= 2 && s.charAt(start) == '0') {
            radix = 8;
            i += 1;
        }
        long v = 0;
        for (; i < end; i++) {
            int d = Character.digit(s.charAt(i), radix);
            if (d < 0 || s.charAt(i) > 0x7f) {
                return -1;
            }
            v = v * radix + d;
            if (v > 0xFFFF_FFFFL) {
                return -1;
            }
        }
        return v;
    }

    /**
     * Parses a strict dotted-quad IPv4 address: exactly 4 decimal parts 0..255 without leading zeros
     * (so no octal ambiguity), as RFC 3986's {@code IPv4address} and RFC 4291's embedded form.
     *
     * @return the 4 bytes, or null
     */
    public static byte @Nullable [] parseDottedQuad(String text) {
        byte[] out = new byte[4];
        int part = 0;
        int i = 0;
        int len = text.length();
        while (part < 4) {
            int start = i;
            int v = 0;
            while (i < len && text.charAt(i) >= '0' && text.charAt(i) <= '9') {
                v = v * 10 + (text.charAt(i) - '0');
                i++;
                if (i - start > 3) {
                    return null;
                }
            }
            if (i == start || v > 255 || (i - start > 1 && text.charAt(start) == '0')) {
                return null;
            }
            out[part++] = (byte) v;
            if (part < 4) {
                if (i >= len || text.charAt(i) != '.') {
                    return null;
                }
                i++;
            }
        }
        return i == len ? out : null;
    }

    /**
     * Parses an IPv6 address in RFC 4291 section 2.2 text form (no brackets, no zone id): up to eight
     * groups of 1 to 4 hex digits, at most one {@code ::}, optionally ending in a dotted quad.
     *
     * @return the 16 bytes, or null
     */
    public static byte @Nullable [] parseIpv6(String text) {
        int len = text.length();
        if (len < 2 || len > 45) {
            return null;
        }
        int[] groups = new int[8];
        int n = 0;
        int gap = -1; // index in groups where "::" sits
        int i = 0;
        if (text.startsWith("::")) {
            gap = 0;
            i = 2;
            if (i == len) {
                return new byte[16];
            }
        } else if (text.charAt(0) == ':') {
            return null;
        }
        while (i < len) {
            if (n == 8) {
                return null;
            }
            int start = i;
            int v = 0;
            while (i < len && i - start < 5) {
                int d = Character.digit(text.charAt(i), 16);
                if (d < 0 || text.charAt(i) > 0x7f) {
                    break;
                }
                v = (v << 4) | d;
                i++;
            }
            if (i < len && text.charAt(i) == '.') {
                // embedded dotted quad: must be the last 32 bits
                byte[] v4 = parseDottedQuad(text.substring(start));
                if (v4 == null || n > 6) {
                    return null;
                }
                groups[n++] = ((v4[0] & 0xff) << 8) | (v4[1] & 0xff);
                groups[n++] = ((v4[2] & 0xff) << 8) | (v4[3] & 0xff);
                i = len;
                break;
            }
            int digits = i - start;
            if (digits == 0 || digits > 4) {
                return null;
            }
            groups[n++] = v;
            if (i == len) {
                break;
            }
            if (text.charAt(i) != ':') {
                return null;
            }
            i++;
            if (i < len && text.charAt(i) == ':') {
                if (gap >= 0) {
                    return null;
                }
                gap = n;
                i++;
                if (i == len) {
                    break;
                }
            } else if (i == len) {
                return null; // trailing single colon
            }
        }
        if (gap < 0 && n != 8) {
            return null;
        }
        if (gap >= 0 && n > 7) {
            return null; // "::" must stand for at least one group (RFC 4291 2.2)
        }
        byte[] out = new byte[16];
        int zeros = 8 - n;
        int g = 0;
        for (int k = 0; k < n; k++) {
            if (k == gap) {
                g += zeros;
            }
            out[2 * g] = (byte) (groups[k] >>> 8);
            out[2 * g + 1] = (byte) groups[k];
            g++;
        }
        return out;
    }

    /**
     * Formats 16 bytes as RFC 5952 text: lowercase, leading zeros dropped, the longest run (first on a
     * tie) of two or more zero groups as {@code ::}; an IPv4-mapped address as {@code ::ffff:a.b.c.d}
     * (RFC 5952 section 5).
     */
    public static String formatIpv6(byte[] a) {
        if (isMapped(a)) {
            return "::ffff:" + formatIpv4(a[12], a[13], a[14], a[15]);
        }
        int[] g = new int[8];
        for (int i = 0; i < 8; i++) {
            g[i] = ((a[2 * i] & 0xff) << 8) | (a[2 * i + 1] & 0xff);
        }
        int bestStart = -1;
        int bestLen = 0;
        for (int i = 0; i < 8; ) {
            if (g[i] != 0) {
                i++;
                continue;
            }
            int j = i;
            while (j < 8 && g[j] == 0) {
                j++;
            }
            if (j - i > bestLen) {
                bestStart = i;
                bestLen = j - i;
            }
            i = j;
        }
        if (bestLen < 2) {
            bestStart = -1;
        }
        StringBuilder sb = new StringBuilder(39);
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                sb.append("::");
                i += bestLen - 1;
                continue;
            }
            if (sb.length() > 0 && sb.charAt(sb.length() - 1) != ':') {
                sb.append(':');
            }
            sb.append(Integer.toHexString(g[i]));
        }
        return sb.toString();
    }

    /** Formats 4 bytes as a dotted quad. */
    public static String formatIpv4(byte a, byte b, byte c, byte d) {
        return (a & 0xff) + "." + (b & 0xff) + "." + (c & 0xff) + "." + (d & 0xff);
    }

    /** Formats a 32-bit value as a dotted quad. */
    public static String formatIpv4(int v) {
        return formatIpv4((byte) (v >>> 24), (byte) (v >>> 16), (byte) (v >>> 8), (byte) v);
    }

    /** Answers whether 16 bytes are an IPv4-mapped address (::ffff:0:0/96, RFC 4291 section 2.5.5.2). */
    public static boolean isMapped(byte[] a) {
        if (a.length != 16) {
            return false;
        }
        for (int i = 0; i < 10; i++) {
            if (a[i] != 0) {
                return false;
            }
        }
        return a[10] == (byte) 0xff && a[11] == (byte) 0xff;
    }

    /** Returns an {@link Inet4Address} for a 32-bit value. */
    public static Inet4Address inet4(int v) {
        return inet4(new byte[] {(byte) (v >>> 24), (byte) (v >>> 16), (byte) (v >>> 8), (byte) v});
    }

    /** Returns an {@link Inet4Address} for 4 bytes, without a host name (so nothing is resolved). */
    public static Inet4Address inet4(byte[] a) {
        try {
            return (Inet4Address) InetAddress.getByAddress(a);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("address: " + a.length + " bytes (expected: 4)", e);
        }
    }

    /**
     * Returns an {@link Inet6Address} for 16 bytes, also for an IPv4-mapped address (which
     * {@link InetAddress#getByAddress(byte[])} would turn into an {@link Inet4Address}).
     */
    public static Inet6Address inet6(byte[] a) {
        try {
            return Inet6Address.getByAddress(null, a, -1);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("address: " + a.length + " bytes (expected: 16)", e);
        }
    }

    /**
     * Returns the IPv4 address an address denotes for comparisons: the address itself when IPv4, the
     * embedded address of an IPv4-mapped IPv6 address; null for any other IPv6 address.
     */
    public static @Nullable Inet4Address v4View(InetAddress address) {
        if (address instanceof Inet4Address) {
            return (Inet4Address) address;
        }
        byte[] a = address.getAddress();
        if (isMapped(a)) {
            return inet4(new byte[] {a[12], a[13], a[14], a[15]});
        }
        return null;
    }

    /** Returns the 4 bytes of an IPv4 address as an int. */
    public static int toInt(byte[] a, int offset) {
        return ((a[offset] & 0xff) << 24) | ((a[offset + 1] & 0xff) << 16) | ((a[offset + 2] & 0xff) << 8)
                | (a[offset + 3] & 0xff);
    }

    /** Returns the canonical text of an address: dotted quad, or RFC 5952 IPv6 without brackets. */
    public static String canonicalText(InetAddress address) {
        byte[] a = address.getAddress();
        return a.length == 4 ? formatIpv4(a[0], a[1], a[2], a[3]) : formatIpv6(a);
    }

    /**
     * Parses an IP literal strictly (dotted quad, or IPv6 with or without brackets, no zone id), for
     * policy values where one spelling is expected.
     *
     * @return the address, or null
     */
    public static @Nullable InetAddress parseStrict(String text) {
        if (text.startsWith("[") && text.endsWith("]")) {
            byte[] v6 = parseIpv6(text.substring(1, text.length() - 1));
            return v6 == null ? null : inet6(v6);
        }
        if (text.indexOf(':') >= 0) {
            byte[] v6 = parseIpv6(text);
            return v6 == null ? null : inet6(v6);
        }
        byte[] v4 = parseDottedQuad(text);
        return v4 == null ? null : inet4(v4);
    }
}
