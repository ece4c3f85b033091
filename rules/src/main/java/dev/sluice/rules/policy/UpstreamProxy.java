package dev.sluice.rules.policy;

import dev.sluice.rules.address.Cidr;
import dev.sluice.rules.target.Target;
import java.net.InetAddress;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The {@code upstream_proxy} section (operator-level, never per extension): the parent proxy Sluice's
 * own upstream connections go through when the network's only way out is a corporate proxy.
 *
 * <p>Sluice decides first, exactly as without a parent; then, for a target not covered by
 * {@link #noProxy}, it opens a TCP connection to the parent and asks it {@code CONNECT host:port}
 * (RFC 9110 section 9.3.6) before anything else crosses: blind tunnels and intercepted legs use
 * {@link #https}, plain HTTP forwarding uses {@link #http} (also by CONNECT, see docs/policy.md).
 *
 * @param https the parent for CONNECT tunnels and intercepted legs; null: those go direct
 * @param http the parent for plain HTTP; null: plain HTTP goes direct
 * @param noProxy targets that never go through a parent (checked in order; any match bypasses)
 * @param credentials the parent's Basic credentials (RFC 7617) from {@code auth_file}; null: none sent
 * @param connectBy what Sluice names in its CONNECT to the parent
 */
public record UpstreamProxy(@Nullable Parent https, @Nullable Parent http, List<NoProxy> noProxy,
                            @Nullable ParentCredentials credentials,
                            ConnectBy connectBy) {

    /** No parent: every upstream connection goes direct. */
    public static final UpstreamProxy NONE = new UpstreamProxy(null, null, List.of(), null, ConnectBy.ADDRESS);

    public UpstreamProxy {
        noProxy = List.copyOf(noProxy);
        Objects.requireNonNull(connectBy, "connectBy");
    }

    /** Returns whether any parent is configured. */
    public boolean configured() {
        return https != null || http != null;
    }

    /**
     * Returns the parent for one upstream connection, or null when it goes direct.
     *
     * @param plainHttp true for plain HTTP forwarding, false for tunnels and intercepted legs
     * @param target the canonical target
     * @param address the checked address Sluice will name, or null when Sluice did not resolve
     */
    public @Nullable Parent parentFor(boolean plainHttp, Target target, InetAddress address) {
        Parent parent = plainHttp ? http : https;
        if (parent == null) {
            return null;
        }
        for (NoProxy entry : noProxy) {
            if (entry.matches(target, address)) {
                return null;
            }
        }
        return parent;
    }

    /** How Sluice names the target to the parent ({@code connect_by}). */
    public enum ConnectBy {
        /**
         * Sluice resolves, checks every answer (address classes, {@code allow_private}), and asks the
         * parent to CONNECT to the checked address: DNS cannot steer the parent to an internal address.
         */
        ADDRESS,
        /**
         * Sluice sends the canonical name and lets the parent resolve it (for parents that resolve
         * internal names Sluice cannot): Sluice's address-class check does not apply to names.
         */
        HOSTNAME
    }

    /**
     * One parent proxy, reached over plain TCP ({@code http://host:port}).
     *
     * @param host the canonical host: a DNS name or an IP literal (no brackets)
     * @param port TCP port, 1-65535
     */
    public record Parent(String host, int port) {
        public Parent {
            Objects.requireNonNull(host, "host");
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException("port: " + port + " (expected: 1-65535)");
            }
        }

        @Override
        public String toString() {
            return "http://" + (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
        }
    }

    /**
     * The parent's credentials, read from {@code auth_file} ({@code user:password} on one line). Never
     * shown: {@link #toString} masks both parts.
     *
     * @param username the user name (no colon)
     * @param password the password (may contain colons)
     */
    public record ParentCredentials(String username, String password) {
        public ParentCredentials {
            Objects.requireNonNull(username, "username");
            Objects.requireNonNull(password, "password");
        }

        @Override
        public String toString() {
            return "ParentCredentials[***]";
        }
    }

    /**
     * One {@code no_proxy} entry, in the forms curl and Go read: {@code *} (everything), an exact name or
     * IP ({@code example.org}: the name and its subdomains), {@code .suffix} (subdomains only), a CIDR
     * ({@code 10.0.0.0/8}: IP-literal targets, and the checked address under {@code connect_by: address}),
     * each optionally with {@code :port} (that port only).
     *
     * @param all true for {@code *}
     * @param host canonical name or IP literal (as {@link Target#host()}), or null (for {@code *} and CIDR entries)
     * @param subdomainsOnly true for the {@code .suffix} form
     * @param cidr the prefix of a CIDR entry, or null
     * @param port the port, or 0 for any
     */
    public record NoProxy(boolean all, @Nullable String host, boolean subdomainsOnly, @Nullable Cidr cidr, int port) {

        /** Returns whether this entry covers the target. */
        public boolean matches(Target target, @Nullable InetAddress address) {
            if (port != 0 && port != target.port()) {
                return false;
            }
            if (all) {
                return true;
            }
            if (cidr != null) {
                return (target.isIpLiteral() && cidr.contains(target.address()))
                        || (address != null && cidr.contains(address));
            }
            if (target.host().equals(host)) {
                return !subdomainsOnly;
            }
            return !target.isIpLiteral() && target.host().endsWith("." + host);
        }
    }
}
