package dev.sluice.proxy.transparent;

import dev.sluice.proxy.tls.ClientHelloParserTest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.SluiceFixture;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The transparent listener and the DNS responder over real loopback sockets, without a namespace
 * (clients connect to the listener directly, so the original destination is the listener itself):
 * identity by source, the peek phase's refusals, the loop guard, Host handling, DNS answers.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TransparentListenerTest {

    private SluiceFixture sluice;
    private InetSocketAddress transparent;
    private InetSocketAddress dns;

    @BeforeAll
    void start() throws Exception {
        int port = SluiceFixture.freePort();
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  local:
                    sources: ["127.0.0.1/32"]
                    allow:
                      - host: origin.test
                        ports: [%1$d]
                      - host: "*.allowed.test"
                        ports: [8443]
                      - host: api.allowed.test
                        methods: [GET]
                        ports: [9000]
                      - cidr: 127.0.0.1/32
                        ports: [%1$d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    origin.test: 127.0.0.1
                limits:
                  header_timeout: 300ms
                  max_header_bytes: 2048
                listen:
                  proxy: 127.0.0.1:0
                  admin: 127.0.0.1:0
                  transparent: 127.0.0.1:%1$d
                  dns: 127.0.0.1:0
                """.formatted(port));
        transparent = sluice.server().transparentAddress();
        dns = sluice.server().dnsAddress();
    }

    @AfterAll
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
    }

    @Test
    void unknownSourceIsClosedAndAudited() throws Exception {
        try (Socket socket = new Socket()) {
            socket.bind(new InetSocketAddress("127.0.0.2", 0));
            socket.connect(transparent, 2_000);
            socket.setSoTimeout(5_000);
            socket.getOutputStream().write("GET / HTTP/1.1\r\nHost: origin.test\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            assertThat(readAll(socket.getInputStream())).isEmpty();
        }
        JsonNode record = awaitRecord(r -> "127.0.0.2".equals(text(r, "client.address")));
        assertThat(text(record, "reason")).isEqualTo("unknown_extension");
        assertThat(text(record, "listener")).isEqualTo("transparent");
        assertThat(record.get("extension")).isNull();
    }

    @Test
    void neitherHttpNorTls() throws Exception {
        int port = send("SSH-2.0-OpenSSH_9.6\r\n".getBytes(StandardCharsets.US_ASCII)).port;
        JsonNode record = awaitRecord(r -> r.get("client.port") != null && r.get("client.port").asInt() == port);
        assertThat(text(record, "reason")).isEqualTo("not_http_or_tls");
        assertThat(text(record, "extension")).isEqualTo("local");
        assertThat(text(record, "decision")).isEqualTo("deny");
    }

    @Test
    void headerTimeout() throws Exception {
        int port = send(new byte[] {22, 3, 1}).port; // a ClientHello that never completes
        JsonNode record = awaitRecord(r -> r.get("client.port") != null && r.get("client.port").asInt() == port);
        assertThat(text(record, "reason")).isEqualTo("header_timeout");
    }

    @Test
    void oversizedClientHello() throws Exception {
        // A record that announces a 4000-byte ClientHello, over max_header_bytes (2048).
        int port = send(new byte[] {22, 3, 1, 0x0f, (byte) 0xa4, 1, 0, 0x0f, (byte) 0xa0}).port;
        JsonNode record = awaitRecord(r -> r.get("client.port") != null && r.get("client.port").asInt() == port);
        assertThat(text(record, "reason")).isEqualTo("header_too_large");
    }

    @Test
    void allowedSniThatLeadsBackToSluiceIsASelfLoop() throws Exception {
        // Connected directly, the original destination is the listener: dialling origin.test on that
        // port would reach Sluice itself.
        int port = send(ClientHelloParserTest.clientHello("origin.test")).port;
        JsonNode record = awaitRecord(r -> r.get("client.port") != null && r.get("client.port").asInt() == port);
        assertThat(text(record, "tls.sni")).isEqualTo("origin.test");
        assertThat(text(record, "reason")).isEqualTo("self_loop");
        assertThat(text(record, "tls.mode")).isEqualTo("tunnel");
    }

    @Test
    void noSniFallsBackToACidrRuleForTheOriginalDestination() throws Exception {
        int port = send(ClientHelloParserTest.clientHello(null)).port;
        JsonNode record = awaitRecord(r -> r.get("client.port") != null && r.get("client.port").asInt() == port);
        // The cidr rule allows 127.0.0.1 on this port, so Sluice dials it: it is Sluice itself.
        assertThat(text(record, "server.address")).isEqualTo("127.0.0.1");
        assertThat(record.get("tls.sni")).isNull();
        assertThat(text(record, "reason")).isEqualTo("self_loop");
    }

    @Test
    void deniedSni() throws Exception {
        int port = send(ClientHelloParserTest.clientHello("evil.test")).port;
        JsonNode record = awaitRecord(r -> r.get("client.port") != null && r.get("client.port").asInt() == port);
        assertThat(text(record, "reason")).isEqualTo("not_allowlisted");
        assertThat(text(record, "server.address")).isEqualTo("evil.test");
        assertThat(record.get("server.port").asInt()).isEqualTo(transparent.getPort());
    }

    @Test
    void plainHttpHostPortMustBeThePortConnectedTo() throws Exception {
        Sent sent = send(("GET /x HTTP/1.1\r\nHost: origin.test:81\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        assertThat(sent.answer).startsWith("HTTP/1.1 400").contains("sluice: malformed_target");
        Sent connect = send(("CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test:443\r\nConnection: close\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        assertThat(connect.answer).startsWith("HTTP/1.1 400");
        Sent denied = send(("GET /x HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        assertThat(denied.answer).startsWith("HTTP/1.1 403").contains("sluice: not_allowlisted");
        JsonNode record = awaitRecord(r -> r.get("client.port") != null && r.get("client.port").asInt() == denied.port);
        assertThat(text(record, "listener")).isEqualTo("transparent");
        assertThat(text(record, "extension")).isEqualTo("local");
        assertThat(text(record, "url.scheme")).isEqualTo("http");
        assertThat(text(record, "url.path")).isEqualTo("/x");
    }

    @Test
    void anUpgradeOnPlainHttpIsRefusedBeforeAnythingIsDialled() throws Exception {
        // Allowed by name; without the refusal it would be dialled (and, connected directly, be a self-loop).
        Sent sent = send(("GET /ws HTTP/1.1\r\nHost: origin.test\r\nUpgrade: h2c\r\nConnection: Upgrade, close\r\n"
                + "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        assertThat(sent.answer).startsWith("HTTP/1.1 501").contains("sluice: upgrade_not_supported");
        JsonNode record = awaitRecord(r -> r.get("client.port") != null && r.get("client.port").asInt() == sent.port);
        assertThat(text(record, "listener")).isEqualTo("transparent");
        assertThat(text(record, "reason")).isEqualTo("upgrade_not_supported");
        assertThat(record.get("http.response.status_code").asInt()).isEqualTo(501);
    }

    @Test
    void dnsAnswers() throws Exception {
        byte[] loopback = InetAddress.getByName("127.0.0.1").getAddress();
        DnsAnswer exact = query("origin.test", 1);
        assertThat(exact.rcode).isZero();
        assertThat(exact.address).containsExactly(loopback);
        // a wildcard rule on a non-default port, and a rule that only a visible request can pass
        assertThat(query("a.allowed.test", 1).address).containsExactly(loopback);
        assertThat(query("api.allowed.test", 1).address).containsExactly(loopback);
        // allowed name, other type: NODATA
        DnsAnswer aaaa = query("origin.test", 28);
        assertThat(aaaa.rcode).isZero();
        assertThat(aaaa.answers).isZero();
        // denied: NXDOMAIN and an audit record, whatever the type
        DnsAnswer denied = query("secret-data.exfil.test", 16);
        assertThat(denied.rcode).isEqualTo(3);
        assertThat(denied.answers).isZero();
        JsonNode record = awaitRecord(r -> "secret-data.exfil.test".equals(text(r, "server.address")));
        assertThat(text(record, "reason")).isEqualTo("dns_not_allowlisted");
        assertThat(text(record, "url.scheme")).isEqualTo("dns");
        assertThat(text(record, "extension")).isEqualTo("local");
        // the apex of a wildcard is not covered
        assertThat(query("allowed.test", 1).rcode).isEqualTo(3);
    }

    @Test
    void dnsOverTcp() throws Exception {
        try (Socket socket = new Socket()) {
            socket.connect(dns, 2_000);
            socket.setSoTimeout(5_000);
            for (String name : new String[] {"origin.test", "nope.test"}) {
                byte[] q = queryBytes(name, 1);
                socket.getOutputStream().write(new byte[] {(byte) (q.length >> 8), (byte) q.length});
                socket.getOutputStream().write(q);
                java.io.DataInputStream in = new java.io.DataInputStream(socket.getInputStream());
                byte[] response = new byte[in.readUnsignedShort()];
                in.readFully(response);
                int rcode = response[3] & 0x0f;
                if (name.equals("origin.test")) {
                    assertThat(rcode).isZero();
                    assertThat(java.util.Arrays.copyOfRange(response, response.length - 4, response.length))
                            .containsExactly(127, 0, 0, 1);
                } else {
                    assertThat(rcode).as("NXDOMAIN").isEqualTo(3);
                }
            }
        }
        JsonNode record = awaitRecord(r -> "nope.test".equals(text(r, "server.address")));
        assertThat(text(record, "reason")).isEqualTo("dns_not_allowlisted");
    }

    // ---- helpers --------------------------------------------------------------------------------

    private record Sent(int port, String answer) {
    }

    /** Sends {@code bytes} from 127.0.0.1 and reads until the server closes (or 5 s pass). */
    private Sent send(byte[] bytes) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(transparent, 2_000);
            socket.setSoTimeout(5_000);
            socket.getOutputStream().write(bytes);
            socket.getOutputStream().flush();
            return new Sent(socket.getLocalPort(), readAll(socket.getInputStream()));
        }
    }

    private static String readAll(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buffer = new byte[4096];
        try {
            int n;
            while ((n = in.read(buffer)) >= 0) {
                out.write(buffer, 0, n);
            }
        } catch (java.net.SocketException e) {
            // reset by Sluice: what was read so far is the answer
        }
        return out.toString(StandardCharsets.ISO_8859_1);
    }

    private record DnsAnswer(int rcode, int answers, byte[] address) {
    }

    /** Sends one RFC 1035 query (class IN, recursion desired) and parses the response's header and last record. */
    private DnsAnswer query(String name, int type) throws IOException {
        try (DatagramSocket socket = new DatagramSocket(new InetSocketAddress("127.0.0.1", 0))) {
            socket.setSoTimeout(5_000);
            byte[] query = queryBytes(name, type);
            socket.send(new DatagramPacket(query, query.length, dns));
            byte[] buffer = new byte[512];
            DatagramPacket packet = new DatagramPacket(buffer, buffer.length);
            socket.receive(packet);
            assertThat(buffer[0]).isEqualTo((byte) 0x12);
            assertThat(buffer[1]).isEqualTo((byte) 0x34);
            assertThat(buffer[2] & 0x80).as("QR").isNotZero();
            int rcode = buffer[3] & 0x0f;
            int answers = ((buffer[6] & 0xff) << 8) | (buffer[7] & 0xff);
            byte[] address = null;
            if (answers > 0) {
                int rdLength = ((buffer[packet.getLength() - 6] & 0xff) << 8) | (buffer[packet.getLength() - 5] & 0xff);
                assertThat(rdLength).isEqualTo(4);
                address = java.util.Arrays.copyOfRange(buffer, packet.getLength() - 4, packet.getLength());
            }
            return new DnsAnswer(rcode, answers, address);
        }
    }

    /** Returns one RFC 1035 query message: id 0x1234, recursion desired, one question of class IN. */
    private static byte[] queryBytes(String name, int type) {
        ByteArrayOutputStream q = new ByteArrayOutputStream();
        q.writeBytes(new byte[] {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0});
        for (String label : name.split("\\.")) {
            q.write(label.length());
            q.writeBytes(label.getBytes(StandardCharsets.US_ASCII));
        }
        q.writeBytes(new byte[] {0, (byte) (type >> 8), (byte) type, 0, 1});
        return q.toByteArray();
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
