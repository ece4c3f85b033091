package dev.sluice.proxy.dns;

import dev.sluice.proxy.audit.Listener;
import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.core.SourceIdentity;
import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.decision.Verdict;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.Rule;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.dns.DatagramDnsQuery;
import io.netty.handler.codec.dns.DatagramDnsResponse;
import io.netty.handler.codec.dns.DefaultDnsRawRecord;
import io.netty.handler.codec.dns.DefaultDnsResponse;
import io.netty.handler.codec.dns.DnsQuery;
import io.netty.handler.codec.dns.DnsResponse;
import io.netty.handler.codec.dns.DnsOpCode;
import io.netty.handler.codec.dns.DnsQuestion;
import io.netty.handler.codec.dns.DnsRecordType;
import io.netty.handler.codec.dns.DnsResponseCode;
import io.netty.handler.codec.dns.DnsSection;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Optional;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Answers the DNS queries of sandboxes itself (RFC 1035), and never forwards one anywhere, so DNS can
 * neither leak names nor carry data out. For each query:
 * <ol>
 *   <li>Identify the extension by the sender's address ({@link SourceIdentity}); none → {@code REFUSED}
 *       and an audit record with reason {@code unknown_extension}.</li>
 *   <li>Canonicalise the question's name as any target ({@link TargetParser#canonicalHost}).</li>
 *   <li>Decide by name: the name is reachable when {@link Decider#decide} permits a tunnel to it on
 *       some port the extension's allow rules name (80 and 443 for rules without {@code ports}), or
 *       refuses it only for its method or path (plain HTTP to it can be allowed).</li>
 *   <li>Reachable: {@code NOERROR}, authoritative, with one {@code A} (or {@code AAAA}) record holding
 *       the transparent listener's address, TTL {@value #TTL_SECONDS} s, when the question's type
 *       matches that address's family; other types get no records (NODATA). No audit record.</li>
 *   <li>Otherwise {@code NXDOMAIN} and an audit record with reason {@code dns_not_allowlisted}
 *       (in report mode: the answer above and decision {@code would_deny}).</li>
 * </ol>
 * Audit records of the responder carry {@code listener=transparent}, {@code url.scheme=dns},
 * {@code server.address} = the queried name, {@code server.port} = 53. A message that is not one
 * standard query with one question is answered {@code FORMERR} or {@code NOTIMP} without a record.
 *
 * <p>Serves UDP ({@link DatagramDnsQuery}, sender from the datagram) and TCP (RFC 7766; sender from the
 * connection), one instance per channel.
 */
final class DnsQueryHandler extends SimpleChannelInboundHandler<DnsQuery> {

    private static final Logger log = LoggerFactory.getLogger(DnsQueryHandler.class);

    /** TTL of the answers, in seconds: short, so a policy reload is seen soon. */
    static final int TTL_SECONDS = 5;
    /** Rule id of responder refusals that no rule decided. */
    static final String DNS_RULE = BuiltinRules.DNS_QUERY;

    private final ProxyContext context;
    private final InetAddress answer;

    DnsQueryHandler(ProxyContext context, InetAddress answer) {
        this.context = context;
        this.answer = answer;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, DnsQuery query) {
        InetSocketAddress sender;
        DnsResponse response;
        if (query instanceof DatagramDnsQuery datagram) {
            sender = datagram.sender();
            response = new DatagramDnsResponse(datagram.recipient(), datagram.sender(), query.id(), query.opCode());
        } else {
            sender = (InetSocketAddress) ctx.channel().remoteAddress();
            response = new DefaultDnsResponse(query.id(), query.opCode());
        }
        response.setRecursionDesired(query.isRecursionDesired());
        response.setAuthoritativeAnswer(true);
        DnsQuestion question = query.count(DnsSection.QUESTION) == 1 ? query.recordAt(DnsSection.QUESTION) : null;
        if (!DnsOpCode.QUERY.equals(query.opCode())) {
            ctx.writeAndFlush(response.setCode(DnsResponseCode.NOTIMP));
            return;
        }
        if (question == null) {
            ctx.writeAndFlush(response.setCode(DnsResponseCode.FORMERR));
            return;
        }
        response.addRecord(DnsSection.QUESTION, question);
        Policy policy = context.policies().current();
        AuditEvent audit = new AuditEvent(context.audit(), context.clock())
                .listener(Listener.TRANSPARENT)
                .client(sender)
                .scheme("dns");
        String name = question.name();
        Optional<Extension> extension = SourceIdentity.identify(policy, sender.getAddress());
        if (extension.isEmpty()) {
            audit.server(printable(name), 53).decision(Decision.deny(Reason.UNKNOWN_EXTENSION, BuiltinRules.SOURCES))
                    .error("no extension has this source address").emit();
            ctx.writeAndFlush(response.setCode(DnsResponseCode.REFUSED));
            return;
        }
        audit.extension(extension.get().name());
        Target target;
        try {
            target = TargetParser.canonicalHost(name, 443);
        } catch (MalformedTargetException e) {
            audit.server(printable(name), 53).decision(Decision.deny(Reason.DNS_NOT_ALLOWLISTED, DNS_RULE))
                    .error(e.getMessage()).emit();
            ctx.writeAndFlush(response.setCode(DnsResponseCode.NXDOMAIN));
            return;
        }
        audit.server(target.host(), 53);
        Decision decision = Decider.decideDnsQuery(policy, extension.get(), target);
        if (decision.verdict() == Verdict.ALLOW) {
            addAnswer(response, question);
            ctx.writeAndFlush(response.setCode(DnsResponseCode.NOERROR));
            return;
        }
        audit.decision(decision);
        audit.emit();
        if (decision.permits()) {
            addAnswer(response, question); // report mode: answered, recorded as would_deny
            ctx.writeAndFlush(response.setCode(DnsResponseCode.NOERROR));
        } else {
            ctx.writeAndFlush(response.setCode(DnsResponseCode.NXDOMAIN));
        }
    }

    /** Decides a name as {@link Decider#decideName} does (kept for the handler's tests). */
    static Decision decideName(Policy policy, Extension extension, String host) {
        return Decider.decideName(policy, extension, host);
    }

    private void addAnswer(DnsResponse response, DnsQuestion question) {
        byte[] address = answer.getAddress();
        boolean matches = (question.type().equals(DnsRecordType.A) && answer instanceof Inet4Address)
                || (question.type().equals(DnsRecordType.AAAA) && answer instanceof Inet6Address);
        if (matches) {
            response.addRecord(DnsSection.ANSWER, new DefaultDnsRawRecord(question.name(), question.type(),
                    TTL_SECONDS, Unpooled.wrappedBuffer(address)));
        }
    }

    /** Returns {@code name} cut to 253 printable ASCII characters, for the audit record. */
    private static String printable(String name) {
        StringBuilder out = new StringBuilder(Math.min(name.length(), 253));
        for (int i = 0; i < name.length() && out.length() < 253; i++) {
            char c = name.charAt(i);
            out.append(c > 0x20 && c < 0x7f ? c : '?');
        }
        return out.toString();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        // A datagram that does not decode: dropped (a UDP socket has nothing to close).
        log.debug("dns: dropped a message: {}", cause.toString());
    }
}
