package dev.sluice.proxy.dns;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.core.ConnectionLimits;
import dev.sluice.proxy.core.PolicyHolder;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.limits.EgressBudgets;
import dev.sluice.proxy.metrics.SluiceMetrics;
import dev.sluice.rules.policy.PolicyLoader;
import io.netty.buffer.ByteBuf;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.dns.DatagramDnsQuery;
import io.netty.handler.codec.dns.DatagramDnsResponse;
import io.netty.handler.codec.dns.DefaultDnsQuestion;
import io.netty.handler.codec.dns.DnsOpCode;
import io.netty.handler.codec.dns.DnsRawRecord;
import io.netty.handler.codec.dns.DnsRecordType;
import io.netty.handler.codec.dns.DnsResponseCode;
import io.netty.handler.codec.dns.DnsSection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DnsQueryHandler} on an {@link EmbeddedChannel}, fed Netty's own DNS messages (RFC 1035) as a
 * datagram channel would hand them: what each query is answered (code, authority, the one record
 * pointing at the transparent listener, nothing for another type), which queries leave an audit record
 * and what it says, and that messages that are not one standard query are answered without one.
 */
class DnsQueryHandlerAnswersTest {

    private static final InetSocketAddress SANDBOX = new InetSocketAddress("10.0.0.2", 40000);
    private static final InetSocketAddress STRANGER = new InetSocketAddress("10.0.0.9", 40000);
    private static final InetSocketAddress RESPONDER = new InetSocketAddress("10.0.0.1", 53);

    @TempDir
    Path dir;
    private final List<AuditRecord> records = new CopyOnWriteArrayList<>();
    private AuditLog auditLog;
    private EmbeddedChannel channel;
    private InetAddress listener;

    void start(String mode) throws Exception {
        var policy = PolicyLoader.parse("""
                version: 1
                mode: %s
                extensions:
                  ext:
                    sources: ["10.0.0.2/32"]
                    allow:
                      - host: plain.test
                """.formatted(mode), "dns.yaml");
        SluiceMetrics metrics = new SluiceMetrics();
        auditLog = AuditLog.open(dir.resolve("audit.jsonl"));
        ProxyContext context = new ProxyContext(new PolicyHolder(policy, Clock.systemUTC()), auditLog, records::add,
                null, Clock.systemUTC(), metrics, new ConnectionLimits(metrics), null,
                new EgressBudgets(Clock.systemUTC()));
        listener = InetAddress.getByName("10.0.0.1");
        channel = new EmbeddedChannel(new DnsQueryHandler(context, listener));
    }

    @BeforeEach
    void setUp() throws Exception {
        start("enforce");
    }

    @AfterEach
    void tearDown() {
        channel.finishAndReleaseAll();
        auditLog.close();
    }

    private DatagramDnsResponse ask(InetSocketAddress from, String name, DnsRecordType type) {
        DatagramDnsQuery query = new DatagramDnsQuery(from, RESPONDER, 4242);
        query.setRecursionDesired(true);
        query.addRecord(DnsSection.QUESTION, new DefaultDnsQuestion(name, type));
        channel.writeInbound(query);
        DatagramDnsResponse response = channel.readOutbound();
        assertThat(response).as("an answer to " + name).isNotNull();
        assertThat(response.id()).isEqualTo(4242);
        assertThat(response.recipient()).isEqualTo(from);
        return response;
    }

    @Test
    void anAllowedNameIsAnsweredWithTheListenerAndLeavesNoRecord() {
        DatagramDnsResponse response = ask(SANDBOX, "plain.test.", DnsRecordType.A);
        try {
            assertThat(response.code()).isEqualTo(DnsResponseCode.NOERROR);
            assertThat(response.isAuthoritativeAnswer()).isTrue();
            assertThat(response.isRecursionDesired()).isTrue();
            assertThat(response.count(DnsSection.ANSWER)).isEqualTo(1);
            DnsRawRecord answer = response.recordAt(DnsSection.ANSWER);
            assertThat(answer.type()).isEqualTo(DnsRecordType.A);
            assertThat(answer.timeToLive()).isEqualTo(DnsQueryHandler.TTL_SECONDS);
            ByteBuf bytes = answer.content();
            byte[] address = new byte[bytes.readableBytes()];
            bytes.getBytes(bytes.readerIndex(), address);
            assertThat(address).isEqualTo(listener.getAddress());
        } finally {
            response.release();
        }
        assertThat(records).isEmpty();
    }

    @Test
    void anotherTypeOfAnAllowedNameGetsNoDataAndNoRecord() {
        DatagramDnsResponse response = ask(SANDBOX, "plain.test.", DnsRecordType.AAAA);
        try {
            assertThat(response.code()).isEqualTo(DnsResponseCode.NOERROR);
            assertThat(response.count(DnsSection.ANSWER)).isZero();
        } finally {
            response.release();
        }
        assertThat(records).isEmpty();
    }

    @Test
    void anUnknownNameIsNxdomainWithItsRecord() {
        DatagramDnsResponse response = ask(SANDBOX, "exfil.example.", DnsRecordType.A);
        try {
            assertThat(response.code()).isEqualTo(DnsResponseCode.NXDOMAIN);
            assertThat(response.count(DnsSection.ANSWER)).isZero();
        } finally {
            response.release();
        }
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.decision()).isEqualTo("deny");
            assertThat(r.reason()).isEqualTo("dns_not_allowlisted");
            assertThat(r.extension()).isEqualTo("ext");
            assertThat(r.serverAddress()).isEqualTo("exfil.example");
            assertThat(r.serverPort()).isEqualTo(53);
            assertThat(r.urlScheme()).isEqualTo("dns");
        });
    }

    @Test
    void anIpLiteralIsNeverAnswered() {
        DatagramDnsResponse response = ask(SANDBOX, "169.254.169.254.", DnsRecordType.A);
        try {
            assertThat(response.code()).isEqualTo(DnsResponseCode.NXDOMAIN);
        } finally {
            response.release();
        }
        assertThat(records).singleElement().satisfies(r -> assertThat(r.reason()).isEqualTo("dns_not_allowlisted"));
    }

    @Test
    void inReportModeAMissIsAnsweredAndRecordedAsWouldDeny() throws Exception {
        tearDown();
        records.clear();
        start("report");
        DatagramDnsResponse response = ask(SANDBOX, "exfil.example.", DnsRecordType.A);
        try {
            assertThat(response.code()).isEqualTo(DnsResponseCode.NOERROR);
            assertThat(response.count(DnsSection.ANSWER)).isEqualTo(1);
        } finally {
            response.release();
        }
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.decision()).isEqualTo("would_deny");
            assertThat(r.reason()).isEqualTo("dns_not_allowlisted");
        });
    }

    @Test
    void aSenderOfNoExtensionIsRefusedWithItsRecord() {
        DatagramDnsResponse response = ask(STRANGER, "plain.test.", DnsRecordType.A);
        try {
            assertThat(response.code()).isEqualTo(DnsResponseCode.REFUSED);
            assertThat(response.count(DnsSection.ANSWER)).isZero();
        } finally {
            response.release();
        }
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.decision()).isEqualTo("deny");
            assertThat(r.reason()).isEqualTo("unknown_extension");
        });
    }

    @Test
    void notAStandardQueryOrNotOneQuestionIsAnsweredWithoutARecord() {
        DatagramDnsQuery notify = new DatagramDnsQuery(SANDBOX, RESPONDER, 7, DnsOpCode.NOTIFY);
        notify.addRecord(DnsSection.QUESTION, new DefaultDnsQuestion("plain.test.", DnsRecordType.A));
        channel.writeInbound(notify);
        DatagramDnsResponse notImplemented = channel.readOutbound();
        DatagramDnsQuery empty = new DatagramDnsQuery(SANDBOX, RESPONDER, 8);
        channel.writeInbound(empty);
        DatagramDnsResponse formErr = channel.readOutbound();
        try {
            assertThat(notImplemented.code()).isEqualTo(DnsResponseCode.NOTIMP);
            assertThat(formErr.code()).isEqualTo(DnsResponseCode.FORMERR);
        } finally {
            notImplemented.release();
            formErr.release();
        }
        assertThat(records).isEmpty();
    }
}
