package dev.sluice.proxy.exchange;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;

/**
 * The request phase as the forwarding phase sees it: exchanges on one downstream connection run one at
 * a time, in order (RFC 9112 section 9.3.2: responses in the order of the requests), and the
 * forwarder says when the current one is over so that the next (pipelined) request may start. Looked
 * up in the pipeline by this type ({@code pipeline.context(ExchangeSequencer.class)}), so the forwarder
 * imports no request-phase class.
 */
public interface ExchangeSequencer extends ChannelHandler {

    /**
     * Called by the forwarding phase when the response of the current exchange has been written in full
     * (or the exchange ended otherwise). Resumes reading and handles any pipelined request that waited.
     * Call on the event loop.
     *
     * @param ctx the sequencer's own handler context
     */
    void exchangeComplete(ChannelHandlerContext ctx);
}
