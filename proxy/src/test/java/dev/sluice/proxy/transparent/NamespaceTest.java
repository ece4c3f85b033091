package dev.sluice.proxy.transparent;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.SluiceFixture;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Transparent mode in a real network namespace: {@code docker/sandbox-netns.sh} builds a namespace
 * whose only route leads to an in-process Sluice (transparent listener and DNS responder on the host
 * end of the veth pair), and {@code curl} / {@code dig} run inside it with no proxy variable. Origins
 * are WireMock on 127.0.0.1, reached by Sluice through {@code network.hosts} and {@code allow_private}.
 *
 * <p>Runs only as root with {@code ip}, {@code iptables}, {@code curl} and {@code dig} present (CI
 * installs them); elsewhere it is skipped. The namespace is torn down in {@link #stop()} even when a
 * test fails, and namespaces left by a crashed run (same name prefix) are removed first.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NamespaceTest {

    /** Every namespace this test creates starts with this. */
    static final String PREFIX = "sltst";
    private static final Path SCRIPT = Path.of("..", "docker", "sandbox-netns.sh").toAbsolutePath().normalize();
    private static final Duration CMD_TIMEOUT = Duration.ofSeconds(30);

    private String name;
    private String hostIp;
    private String nsIp;
    private boolean up;
    /** A second sandbox sharing the first one's Sluice address (SLUICE_ADDRESS). */
    private String name2;
    private String ns2Ip;
    private boolean up2;
    private Origins origins;
    /** An HTTP/2-only TLS origin (h2only.test, inspected). */
    private dev.sluice.proxy.testing.H2Origin h2Origin;
    /** A plain ws:// echo origin (node ws-origin.js), reached by Host on the transparent listener. */
    private Process wsOrigin;
    private int wsPort;
    private SluiceFixture sluice;

    @BeforeAll
    void start() throws Exception {
        assumeTrue(run(List.of("id", "-u"), Map.of()).out().strip().equals("0"), "needs root");
        for (String tool : List.of("ip", "iptables", "curl", "dig")) {
            assumeTrue(run(List.of("bash", "-c", "command -v " + tool), Map.of()).exit() == 0, "needs " + tool);
        }
        removeLeftovers();
        name = PREFIX + Integer.toHexString(ThreadLocalRandom.current().nextInt(0x10000, 0xfffff));
        String subnet = freeSubnet();
        hostIp = subnet + ".1";
        nsIp = subnet + ".2";
        name2 = name + "b";
        String subnet2 = freeSubnet();
        while (subnet2.equals(subnet)) {
            subnet2 = freeSubnet();
        }
        ns2Ip = subnet2 + ".2";
        int transparentPort = SluiceFixture.freePort();
        int dnsPort = SluiceFixture.freePort();
        try {
            origins = Origins.start(dev.sluice.proxy.testing.TestTls.create(
                    java.nio.file.Files.createTempDirectory("sluice-ns-tls-"), "origin.test", "inspected.test",
                    "localhost", "127.0.0.1"));
            origins.server().stubFor(get(urlPathEqualTo("/hello")).willReturn(aResponse().withStatus(200).withBody("hi")));
            dev.sluice.proxy.testing.TestTls h2Tls = dev.sluice.proxy.testing.TestTls.create(
                    java.nio.file.Files.createTempDirectory("sluice-ns-h2-tls-"), "h2only.test");
            h2Origin = dev.sluice.proxy.testing.H2Origin.start(h2Tls);
            Path nodeDir = Path.of("src/test/node").toAbsolutePath();
            assumeTrue(Files.isDirectory(nodeDir.resolve("node_modules/ws")), "needs proxy/src/test/node/node_modules (npm ci)");
            wsOrigin = new ProcessBuilder("node", nodeDir.resolve("ws-origin.js").toString()).directory(nodeDir.toFile())
                    .redirectError(ProcessBuilder.Redirect.DISCARD).start();
            String first = new java.io.BufferedReader(new java.io.InputStreamReader(wsOrigin.getInputStream(),
                    StandardCharsets.UTF_8)).readLine();
            assertThat(first).as("ws-origin.js first line").startsWith("LISTENING ");
            wsPort = Integer.parseInt(first.substring("LISTENING ".length()).trim());
            Cmd created = run(List.of(SCRIPT.toString(), "up", name, subnet + ".0/30"), Map.of(
                    "SLUICE_TRANSPARENT_PORT", String.valueOf(transparentPort),
                    "SLUICE_DNS_PORT", String.valueOf(dnsPort)));
            up = true;
            assertThat(created.exit()).as(created.err()).isZero();
            Cmd created2 = run(List.of(SCRIPT.toString(), "up", name2, subnet2 + ".0/30"), Map.of(
                    "SLUICE_ADDRESS", hostIp,
                    "SLUICE_TRANSPARENT_PORT", String.valueOf(transparentPort),
                    "SLUICE_DNS_PORT", String.valueOf(dnsPort)));
            up2 = true;
            assertThat(created2.exit()).as(created2.err()).isZero();
            sluice = SluiceFixture.start("""
                    version: 1
                    extensions:
                      sandbox:
                        sources: ["%1$s/32"]
                        allow:
                          - host: origin.test
                            ports: [%2$d, %3$d, %9$d]
                          - host: inspected.test
                            ports: [%2$d]
                          - host: h2only.test
                            ports: [%10$d]
                      second:
                        sources: ["%7$s/32"]
                        allow:
                          - host: origin.test
                            ports: [%2$d]
                      host:
                        # Sluice's own upstream sockets come from here: were one sent back to the
                        # transparent listener, it would be identified and allowed (see noLoop).
                        sources: ["127.0.0.1/32"]
                        allow:
                          - host: origin.test
                            ports: [%2$d, %3$d]
                    network:
                      allow_private: ["127.0.0.1/32"]
                      hosts:
                        origin.test: 127.0.0.1
                        denied.test: 127.0.0.1
                        inspected.test: 127.0.0.1
                        h2only.test: 127.0.0.1
                    inspect:
                      inspected.test: {}
                      h2only.test: { redact: true }
                    tls:
                      extra_trust: ["%8$s", "%11$s"]
                    listen:
                      proxy: 127.0.0.1:0
                      admin: 127.0.0.1:0
                      transparent: %4$s:%5$d
                      dns: %4$s:%6$d
                    """.formatted(nsIp, origins.httpsPort(), origins.httpPort(), hostIp, transparentPort, dnsPort, ns2Ip,
                            origins.caPem().toAbsolutePath(), wsPort, h2Origin.port(),
                            h2Tls.caPem().toAbsolutePath()));
        } catch (Throwable t) {
            stop();
            throw t;
        }
    }

    /** Stops everything that was started; safe to call twice (after a failed start, and as @AfterAll). */
    @AfterAll
    void stop() {
        try {
            if (sluice != null) {
                SluiceFixture s = sluice;
                sluice = null;
                s.close();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            try {
                if (h2Origin != null) {
                    h2Origin.close();
                    h2Origin = null;
                }
                if (wsOrigin != null) {
                    wsOrigin.destroyForcibly();
                    wsOrigin = null;
                }
                if (origins != null) {
                    Origins o = origins;
                    origins = null;
                    o.close();
                }
            } finally {
                if (up) {
                    up = false;
                    run(List.of(SCRIPT.toString(), "down", name), Map.of());
                }
                if (up2) {
                    up2 = false;
                    run(List.of(SCRIPT.toString(), "down", name2), Map.of());
                }
            }
        }
    }

    @Test
    void allowedHttpsHostWorksThroughABlindTunnel() {
        Cmd curl = curl("--cacert", origins.caPem().toString(), "https://origin.test:" + origins.httpsPort() + "/hello");
        assertThat(curl.exit()).as(curl.err()).isZero();
        assertThat(curl.body()).isEqualTo("hi");
        assertThat(curl.status()).isEqualTo(200);
        JsonNode record = awaitRecord(r -> "origin.test".equals(text(r, "tls.sni")));
        assertThat(text(record, "listener")).isEqualTo("transparent");
        assertThat(text(record, "extension")).isEqualTo("sandbox");
        assertThat(text(record, "client.address")).isEqualTo(nsIp);
        assertThat(text(record, "tls.mode")).isEqualTo("tunnel");
        assertThat(text(record, "decision")).isEqualTo("allow");
        assertThat(text(record, "server.address")).isEqualTo("origin.test");
        assertThat(record.get("server.port").asInt()).isEqualTo(origins.httpsPort());
        assertThat(text(record, "network.peer.address")).isEqualTo("127.0.0.1");
        assertThat(record.get("bytes.sent").asLong()).isPositive();
        assertThat(record.get("bytes.received").asLong()).isPositive();
        String scrape = sluice.server().metrics().scrape();
        assertThat(scrape).containsPattern("sluice_requests_total\\{[^}]*extension=\"sandbox\"[^}]*\\} [1-9]")
                .containsPattern("sluice_egress_bytes_total\\{[^}]*destination=\"origin.test\"[^}]*"
                        + "extension=\"sandbox\"[^}]*\\} [1-9]")
                .contains("sluice_active_connections{extension=\"sandbox\",listener=\"transparent\"");
    }

    @Test
    void aSecondSandboxSharesSluicesAddressAndHasItsOwnIdentity() {
        Cmd dig = inSandbox(name2, "dig", "+short", "+tries=1", "+time=5", "origin.test", "A");
        assertThat(dig.out().strip()).as("the shared address, not this sandbox's gateway").isEqualTo(hostIp);
        Cmd curl = inSandbox(name2, "curl", "-q", "-sS", "--max-time", "15", "-w", "%{http_code}",
                "--cacert", origins.caPem().toString(), "https://origin.test:" + origins.httpsPort() + "/hello?second");
        assertThat(curl.exit()).as(curl.err()).isZero();
        assertThat(curl.body()).isEqualTo("hi");
        JsonNode record = awaitRecord(r -> ns2Ip.equals(text(r, "client.address")) && "origin.test".equals(text(r, "tls.sni")));
        assertThat(text(record, "extension")).isEqualTo("second");
        assertThat(text(record, "decision")).isEqualTo("allow");
        // Its plain HTTP port is not in its own rules, whatever the first sandbox may do.
        Cmd http = inSandbox(name2, "curl", "-q", "-sS", "--max-time", "15", "-w", "%{http_code}",
                "http://origin.test:" + origins.httpPort() + "/hello");
        assertThat(http.status()).isEqualTo(403);
        assertThat(http.body()).isEqualTo("sluice: port_not_allowed\n");
    }

    @Test
    void inspectedHostWorksThroughInterception() {
        // Trusting only Sluice's CA: curl sees a leaf from Sluice's CA, and the exchange is recorded
        // with tls.mode=intercept.
        Cmd curl = curl("--cacert", sluice.dataDir().resolve("ca.crt.pem").toString(),
                "https://inspected.test:" + origins.httpsPort() + "/hello");
        assertThat(curl.exit()).as(curl.err()).isZero();
        assertThat(curl.body()).isEqualTo("hi");
        JsonNode record = awaitRecord(r -> "intercept".equals(text(r, "tls.mode")));
        assertThat(text(record, "listener")).isEqualTo("transparent");
        assertThat(text(record, "extension")).isEqualTo("sandbox");
    }

    @Test
    void inspectedHostSpeaksH2ThroughTransparentInterception() {
        // The same interception path as the explicit listener's: ALPN h2, one record per stream.
        Cmd curl = curl("--http2", "-v", "--cacert", sluice.dataDir().resolve("ca.crt.pem").toString(),
                "https://inspected.test:" + origins.httpsPort() + "/hello?via=h2");
        assertThat(curl.exit()).as(curl.err()).isZero();
        assertThat(curl.err()).contains("ALPN: server accepted h2").contains("< HTTP/2 200");
        assertThat(curl.body()).isEqualTo("hi");
        JsonNode record = awaitRecord(r -> "intercept".equals(text(r, "tls.mode"))
                && String.valueOf(text(r, "url.path")).startsWith("/hello?via="));
        assertThat(text(record, "listener")).isEqualTo("transparent");
        assertThat(text(record, "http.request.method")).isEqualTo("GET");
    }

    @Test
    void anH2ClientToAnInspectedH2OnlyOriginGetsH2OnBothLegs() {
        // Transparent interception is the explicit listener's: h2 by ALPN downstream, and the origin's
        // choice (here nothing but h2) upstream, one upstream connection for the client's streams.
        Cmd curl = curl("--http2", "-v", "--cacert", sluice.dataDir().resolve("ca.crt.pem").toString(),
                "https://h2only.test:" + h2Origin.port() + "/ok/a", "https://h2only.test:" + h2Origin.port() + "/ok/b");
        assertThat(curl.exit()).as(curl.err()).isZero();
        assertThat(curl.err()).contains("ALPN: server accepted h2").contains("< HTTP/2 200");
        assertThat(curl.out()).contains("{\"ok\":true}");
        assertThat(h2Origin.requests()).extracting(dev.sluice.proxy.testing.H2Origin.Seen::path)
                .containsExactly("/ok/a", "/ok/b");
        assertThat(h2Origin.connections()).isEqualTo(1);
        for (String path : List.of("/ok/a", "/ok/b")) {
            JsonNode record = awaitRecord(r -> path.equals(text(r, "url.path")));
            assertThat(text(record, "listener")).isEqualTo("transparent");
            assertThat(text(record, "tls.mode")).isEqualTo("intercept");
            assertThat(text(record, "upstream.protocol")).isEqualTo("h2");
            assertThat(record.get("http.response.status_code").asInt()).isEqualTo(200);
        }
    }

    @Test
    void aPlainWebSocketByHostIsRelayedAfterThe101WithOneRecord() {
        // A raw client inside the namespace (no proxy): handshake by Host, one masked text frame, the
        // origin's echo back, a close. The transparent listener decides it by Host and relays it.
        String client = String.join("\n",
                "import base64, os, socket, sys",
                "host, port = sys.argv[1], int(sys.argv[2])",
                "s = socket.create_connection((host, port), timeout=10)",
                "key = base64.b64encode(os.urandom(16)).decode()",
                "s.sendall(('GET /chat/room HTTP/1.1\\r\\nHost: %s:%d\\r\\nUpgrade: websocket\\r\\n'",
                "    'Connection: Upgrade\\r\\nSec-WebSocket-Key: %s\\r\\nSec-WebSocket-Version: 13\\r\\n\\r\\n'",
                "    % (host, port, key)).encode())",
                "buf = b''",
                "while b'\\r\\n\\r\\n' not in buf:",
                "    d = s.recv(4096)",
                "    if not d: break",
                "    buf += d",
                "head, _, rest = buf.partition(b'\\r\\n\\r\\n')",
                "print(head.split(b'\\r\\n')[0].decode())",
                "def frame(op, payload):",
                "    mask = os.urandom(4)",
                "    return bytes([0x80 | op, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))",
                "s.sendall(frame(1, b'hello transparent'))",
                "while len(rest) < 2 or len(rest) < 2 + (rest[1] & 0x7f):",
                "    d = s.recv(4096)",
                "    if not d: break",
                "    rest += d",
                "print(rest[2:2 + (rest[1] & 0x7f)].decode())",
                "s.sendall(frame(8, b'\\x03\\xe8'))",
                "s.recv(4096)",
                "s.close()");
        Cmd ws = inNamespace("python3", "-c", client, "origin.test", String.valueOf(wsPort));
        assertThat(ws.exit()).as(ws.err()).isZero();
        assertThat(ws.out()).startsWith("HTTP/1.1 101").contains("echo:hello transparent");
        JsonNode record = awaitRecord(r -> "/chat/room".equals(text(r, "url.path")) && r.has("websocket.mode"));
        assertThat(text(record, "listener")).isEqualTo("transparent");
        assertThat(text(record, "websocket.mode")).isEqualTo("plain");
        assertThat(text(record, "extension")).isEqualTo("sandbox");
        assertThat(record.get("http.response.status_code").asInt()).isEqualTo(101);
        assertThat(record.get("bytes.sent").asLong()).isGreaterThan(20);
    }

    @Test
    void allowedPlainHttpHostWorks() {
        Cmd curl = curl("http://origin.test:" + origins.httpPort() + "/hello?token=secret");
        assertThat(curl.exit()).as(curl.err()).isZero();
        assertThat(curl.status()).isEqualTo(200);
        JsonNode record = awaitRecord(r -> "http".equals(text(r, "url.scheme"))
                && "origin.test".equals(text(r, "server.address")) && "allow".equals(text(r, "decision")));
        assertThat(text(record, "listener")).isEqualTo("transparent");
        assertThat(text(record, "extension")).isEqualTo("sandbox");
        assertThat(text(record, "url.path")).isEqualTo("/hello?token=***");
        assertThat(text(record, "tls.mode")).isEqualTo("none");
        assertThat(record.get("http.response.status_code").asInt()).isEqualTo(200);
    }

    @Test
    void deniedHostFails() {
        // By name: the sandbox's DNS has no answer for it.
        Cmd byName = curl("https://denied.test:" + origins.httpsPort() + "/");
        assertThat(byName.exit()).as("curl exit (6: could not resolve)").isEqualTo(6);
        // Even with an address in hand, the SNI decides: the connection is closed, nothing dialled.
        String resolve = "denied.test:" + origins.httpsPort() + ":" + hostIp;
        Cmd tls = curl("--resolve", resolve, "--cacert", origins.caPem().toString(),
                "https://denied.test:" + origins.httpsPort() + "/");
        assertThat(tls.exit()).as(tls.err()).isNotZero();
        assertThat(tls.status()).isZero();
        JsonNode record = awaitRecord(r -> "denied.test".equals(text(r, "tls.sni")));
        assertThat(text(record, "decision")).isEqualTo("deny");
        assertThat(text(record, "reason")).isEqualTo("not_allowlisted");
        assertThat(text(record, "listener")).isEqualTo("transparent");
        assertThat(text(record, "extension")).isEqualTo("sandbox");
        assertThat(record.get("network.peer.address")).isNull();
        // Plain HTTP is answered 403 by Sluice itself.
        Cmd http = curl("--resolve", "denied.test:" + origins.httpPort() + ":" + hostIp,
                "http://denied.test:" + origins.httpPort() + "/");
        assertThat(http.status()).isEqualTo(403);
        assertThat(http.body()).isEqualTo("sluice: not_allowlisted\n");
    }

    @Test
    void tlsWithoutSniFails() {
        // curl sends no SNI for an IP-literal URL.
        Cmd curl = curl("-k", "https://" + hostIp + ":" + origins.httpsPort() + "/hello");
        assertThat(curl.exit()).as(curl.err()).isNotZero();
        assertThat(curl.status()).isZero();
        JsonNode record = awaitRecord(r -> "no_sni".equals(text(r, "reason")) && hostIp.equals(text(r, "server.address")));
        assertThat(text(record, "listener")).isEqualTo("transparent");
        assertThat(text(record, "extension")).isEqualTo("sandbox");
        assertThat(text(record, "decision")).isEqualTo("deny");
        assertThat(text(record, "server.address")).isEqualTo(hostIp);
    }

    @Test
    void neitherHttpNorTlsIsClosedAndAudited() {
        Cmd raw = inNamespace("bash", "-c", "exec 3<>/dev/tcp/" + hostIp + "/22; printf 'SSH-2.0-test\\r\\n' >&3; "
                + "cat <&3; echo closed");
        assertThat(raw.out()).contains("closed");
        JsonNode record = awaitRecord(r -> "not_http_or_tls".equals(text(r, "reason"))
                && r.get("server.port") != null && r.get("server.port").asInt() == 22);
        assertThat(text(record, "listener")).isEqualTo("transparent");
        assertThat(text(record, "extension")).isEqualTo("sandbox");
        assertThat(record.get("server.port").asInt()).isEqualTo(22);
    }

    @Test
    void noLoopWhenIptablesSendsSluicesOwnUpstreamBack() {
        // A careless rule on the host: every local connection to the origin's port goes to the
        // transparent listener — Sluice's own upstream connection included.
        List<String> rule = List.of("OUTPUT", "-p", "tcp", "-d", "127.0.0.1", "--dport",
                String.valueOf(origins.httpsPort()), "-m", "comment", "--comment", name + "-loop",
                "-j", "DNAT", "--to-destination", hostIp + ":" + sluice.server().transparentAddress().getPort());
        List<String> add = new ArrayList<>(List.of("iptables", "-w", "-t", "nat", "-I"));
        add.addAll(rule);
        List<String> delete = new ArrayList<>(List.of("iptables", "-w", "-t", "nat", "-D"));
        delete.addAll(rule);
        assertThat(run(add, Map.of()).exit()).isZero();
        try {
            int earlier = sluice.audit().size();
            Cmd curl = curl("--cacert", origins.caPem().toString(), "https://origin.test:" + origins.httpsPort() + "/hello");
            assertThat(curl.exit()).as("the tunnel's upstream was refused").isNotZero();
            JsonNode loop = awaitRecord(r -> "self_loop".equals(text(r, "reason"))
                    && "127.0.0.1".equals(text(r, "client.address")));
            assertThat(text(loop, "listener")).isEqualTo("transparent");
            assertThat(text(loop, "rule")).isEqualTo("network.self");
            // Exactly one: the redirected upstream connection was closed, never dialled again. The tunnel's
            // own record is written only once both its sides have closed, so after every upstream
            // connection it made (each one's refusal recorded before it closed).
            await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream().skip(earlier)
                    .anyMatch(r -> nsIp.equals(text(r, "client.address")) && "origin.test".equals(text(r, "tls.sni"))));
            assertThat(sluice.audit().stream().filter(r -> "127.0.0.1".equals(text(r, "client.address"))))
                    .as("records of redirected upstream connections").hasSize(1);
        } finally {
            run(delete, Map.of());
        }
    }

    @Test
    void udpAndOtherProtocolsGoNowhere() throws Exception {
        InetAddress outside = outsideAddress();
        try (DatagramSocket socket = new DatagramSocket(new InetSocketAddress("0.0.0.0", 0))) {
            socket.setSoTimeout(200);
            int port = socket.getLocalPort();
            // Control: the socket does receive what the host itself sends.
            byte[] hello = "control".getBytes(StandardCharsets.US_ASCII);
            try (DatagramSocket sender = new DatagramSocket()) {
                sender.send(new DatagramPacket(hello, hello.length, outside, port));
            }
            assertThat(receive(socket)).isEqualTo("control");
            // From the namespace: UDP to an outside address, and UDP to Sluice's side on a port that is
            // not redirected (a protocol Sluice does not carry). bash's /dev/udp sends one datagram.
            Cmd sent = inNamespace("bash", "-c", "echo outside > /dev/udp/" + outside.getHostAddress() + "/" + port
                    + "; echo gateway > /dev/udp/" + hostIp + "/" + port + "; echo sent");
            assertThat(sent.out()).contains("sent");
            socket.setSoTimeout(1_000);
            assertThat(receive(socket)).as("nothing may arrive from the namespace").isNull();
        }
        // And a DNS query sent straight to an outside resolver is answered by Sluice, never forwarded.
        Cmd dig = inNamespace("dig", "@" + outside.getHostAddress(), "+tries=1", "+time=5", "leak.example", "A");
        assertThat(dig.out()).contains("status: NXDOMAIN");
    }

    @Test
    void dnsAnswersAllowedNamesAndRefusesOthers() {
        Cmd allowed = inNamespace("dig", "+short", "+tries=1", "+time=5", "origin.test", "A");
        assertThat(allowed.out().strip()).isEqualTo(hostIp);
        Cmd aaaa = inNamespace("dig", "+tries=1", "+time=5", "origin.test", "AAAA");
        assertThat(aaaa.out()).contains("status: NOERROR").contains("ANSWER: 0");
        Cmd denied = inNamespace("dig", "+tries=1", "+time=5", "exfil-0123abcd.denied.test", "TXT");
        assertThat(denied.out()).contains("status: NXDOMAIN");
        Cmd overTcp = inNamespace("dig", "+tcp", "+tries=1", "+time=5", "tcp.denied.test", "A");
        assertThat(overTcp.out()).contains("status: NXDOMAIN");
        Cmd allowedOverTcp = inNamespace("dig", "+tcp", "+short", "+tries=1", "+time=5", "origin.test", "A");
        assertThat(allowedOverTcp.out().strip()).isEqualTo(hostIp);
        JsonNode record = awaitRecord(r -> "dns_not_allowlisted".equals(text(r, "reason"))
                && "exfil-0123abcd.denied.test".equals(text(r, "server.address")));
        assertThat(text(record, "listener")).isEqualTo("transparent");
        assertThat(text(record, "extension")).isEqualTo("sandbox");
        assertThat(text(record, "url.scheme")).isEqualTo("dns");
        assertThat(text(record, "server.address")).isEqualTo("exfil-0123abcd.denied.test");
        assertThat(text(record, "client.address")).isEqualTo(nsIp);
    }

    // ---- helpers --------------------------------------------------------------------------------

    /** What a command produced. */
    record Cmd(int exit, String out, String err) {
        int status() {
            String s = out.strip();
            return s.length() >= 3 && s.substring(s.length() - 3).chars().allMatch(Character::isDigit)
                    ? Integer.parseInt(s.substring(s.length() - 3)) : 0;
        }

        String body() {
            String s = out.strip();
            return s.length() >= 3 ? out.substring(0, out.lastIndexOf(s.substring(s.length() - 3))) : s;
        }
    }

    /** Runs curl inside the namespace, no proxy variable; stdout is the body then the 3-digit status. */
    private Cmd curl(String... args) {
        List<String> command = new ArrayList<>(List.of("curl", "-q", "-sS", "--max-time", "15", "-w", "%{http_code}"));
        command.addAll(List.of(args));
        return inNamespace(command.toArray(String[]::new));
    }

    private Cmd inNamespace(String... command) {
        return inSandbox(name, command);
    }

    private Cmd inSandbox(String namespace, String... command) {
        List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", namespace));
        full.addAll(List.of(command));
        return run(full, Map.of());
    }

    private static Cmd run(List<String> command, Map<String, String> env) {
        try {
            Path out = Files.createTempFile("netns-out-", ".txt");
            Path err = Files.createTempFile("netns-err-", ".txt");
            try {
                ProcessBuilder builder = new ProcessBuilder(command)
                        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                        .redirectOutput(out.toFile())
                        .redirectError(err.toFile());
                for (String variable : List.of("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                        "all_proxy", "NO_PROXY", "no_proxy")) {
                    builder.environment().remove(variable);
                }
                builder.environment().putAll(env);
                Process process = builder.start();
                if (!process.waitFor(CMD_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                    process.destroyForcibly().waitFor();
                    throw new IllegalStateException("did not finish within " + CMD_TIMEOUT + ": " + command);
                }
                return new Cmd(process.exitValue(), Files.readString(out), Files.readString(err));
            } finally {
                Files.deleteIfExists(out);
                Files.deleteIfExists(err);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Removes namespaces (and their rules) left by an earlier run that crashed. */
    private static void removeLeftovers() {
        for (String line : run(List.of("iptables", "-w", "-t", "nat", "-S", "OUTPUT"), Map.of()).out().split("\n")) {
            if (line.startsWith("-A OUTPUT") && line.contains("--comment " + PREFIX)) {
                List<String> delete = new ArrayList<>(List.of("iptables", "-w", "-t", "nat", "-D"));
                delete.addAll(List.of(line.substring(3).split(" ")));
                run(delete, Map.of());
            }
        }
        for (String line : run(List.of("ip", "netns", "list"), Map.of()).out().split("\n")) {
            String ns = line.strip().split("\\s+")[0];
            if (ns.startsWith(PREFIX)) {
                run(List.of(SCRIPT.toString(), "down", ns), Map.of());
            }
        }
    }

    /** Returns a 10.x.y prefix for a /30 that no route on this host uses yet. */
    private static String freeSubnet() {
        String routes = run(List.of("ip", "-4", "route", "show", "table", "all"), Map.of()).out();
        String addresses = run(List.of("ip", "-4", "addr"), Map.of()).out();
        for (int attempt = 0; attempt < 100; attempt++) {
            String candidate = "10." + ThreadLocalRandom.current().nextInt(200, 250) + "."
                    + ThreadLocalRandom.current().nextInt(0, 256);
            if (!routes.contains(candidate + ".") && !addresses.contains(candidate + ".")
                    && !routes.contains("10.0.0.0/8")) {
                return candidate;
            }
        }
        throw new IllegalStateException("no free 10.x.y.0/30 found");
    }

    /** Returns an address of this host that is not on the sandbox's veth pair (nor loopback). */
    private InetAddress outsideAddress() throws IOException {
        for (String word : run(List.of("ip", "-4", "-o", "addr", "show"), Map.of()).out().split("\\s+")) {
            if (word.contains("/") && !word.startsWith("127.") && !word.startsWith(hostIp)) {
                return InetAddress.getByName(word.substring(0, word.indexOf('/')));
            }
        }
        throw new IllegalStateException("no non-loopback address on this host");
    }

    private static String receive(DatagramSocket socket) throws IOException {
        byte[] buffer = new byte[512];
        DatagramPacket packet = new DatagramPacket(buffer, buffer.length);
        try {
            socket.receive(packet);
            return new String(packet.getData(), 0, packet.getLength(), StandardCharsets.US_ASCII);
        } catch (SocketTimeoutException e) {
            return null;
        }
    }

    private JsonNode awaitRecord(Predicate<JsonNode> match) {
        return await().atMost(Duration.ofSeconds(10)).until(
                () -> sluice.audit().stream().filter(match).findFirst().orElse(null), r -> r != null);
    }

    private static String text(JsonNode record, String field) {
        JsonNode value = record.get(field);
        return value == null || value.isNull() ? null : value.asText();
    }
}
