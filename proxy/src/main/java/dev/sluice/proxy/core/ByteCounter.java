package dev.sluice.proxy.core;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.metrics.TrafficMeter;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufHolder;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;

/**
 * Counts the bytes on the wire of an upstream channel, as they flow, into the audit record of the
 * exchange in progress and into the extension's byte counters (so a long tunnel's counters grow
 * before it closes): bytes written are {@code bytes.sent} (egress, toward the internet), bytes read
 * are {@code bytes.received} (ingress). Sits first in the upstream pipeline, so it counts exactly
 * what crosses the socket (headers and framing included). Passes every message on untouched.
 */
public final class ByteCounter extends ChannelDuplexHandler {

    private AuditEvent sink;
    private TrafficMeter meter;
    private AuditEvent fallbackSink;
    private TrafficMeter fallbackMeter;

    /**
     * Directs the counts of the next bytes to {@code audit} and {@code meter}; with both null, back to
     * the fallback (see {@link #fallback}). Called on the channel's event loop.
     */
    public void attach(AuditEvent audit, TrafficMeter meter) {
        if (audit == null && meter == null) {
            this.sink = fallbackSink;
            this.meter = fallbackMeter;
        } else {
            this.sink = audit;
            this.meter = meter;
        }
    }

    /**
     * Sets where bytes go between exchanges (an intercepted tunnel's own record: handshakes and the
     * like), and directs the next bytes there.
     */
    public void fallback(AuditEvent audit, TrafficMeter meter) {
        this.fallbackSink = audit;
        this.fallbackMeter = meter;
        attach(null, null);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        long n = size(msg);
        AuditEvent current = sink;
        if (n > 0) {
            if (current != null) {
                current.addBytesReceived(n);
            }
            if (meter != null) {
                meter.ingress().increment(n);
            }
        }
        ctx.fireChannelRead(msg);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        long n = size(msg);
        AuditEvent current = sink;
        if (n > 0) {
            if (current != null) {
                current.addBytesSent(n);
            }
            if (meter != null) {
                meter.egress().increment(n);
                if (meter.budget() != null) {
                    meter.budget().add(n);
                }
            }
        }
        ctx.write(msg, promise);
    }

    private static long size(Object msg) {
        if (msg instanceof ByteBuf buf) {
            return buf.readableBytes();
        }
        if (msg instanceof ByteBufHolder holder) {
            return holder.content().readableBytes();
        }
        return 0;
    }
}
