package dev.sluice.proxy.http;

import dev.sluice.rules.policy.Limits;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpResponseEncoder;
import org.jspecify.annotations.Nullable;

/**
 * The one place an HTTP/1.1 pipeline is assembled: the handler names every phase uses, the request
 * decoder's settings from the policy's limits, and {@link #install} for the explicit listener, the
 * inside of an intercepted tunnel and plain HTTP on the transparent listener. The phase handlers
 * themselves are built by the caller (this leaf knows none of them):
 * <pre>
 *   [idle] [header-deadline]  (the listener's own; the HTTP phases go after them)
 *   decoder   StrictRequestDecoder (RFC 9112 parsing, limits.max_header_bytes, 64 KiB chunks)
 *   encoder   HttpResponseEncoder
 *   request   the request phase (identify, canonicalise, decide)
 *   [redact]  the redaction phase, intercepted hosts with redact: true
 *   [credentials] the credential phase: placeholders swapped (intercepted) or refused
 *   forward   the forwarder (one exchange at a time to the upstream)
 * </pre>
 */
public final class HttpPipeline {

    /** Pipeline name of the idle timeout ({@code limits.idle_timeout}, reads and writes both count). */
    public static final String IDLE = "idle";
    /** Pipeline name of the header timeout (removed when a CONNECT tunnel starts). */
    public static final String HEADER_DEADLINE = "header-deadline";
    /** Pipeline name of the request decoder (removed when a CONNECT tunnel starts). */
    public static final String DECODER = "decoder";
    /** Pipeline name of the response encoder. */
    public static final String ENCODER = "encoder";
    /** Pipeline name of the request phase. */
    public static final String REQUEST = "request";
    /** Pipeline name of the redaction phase (intercepted hosts). */
    public static final String REDACT = "redact";
    /** Pipeline name of the credential phase (placeholders swapped or refused). */
    public static final String CREDENTIALS = "credentials";
    /** Name of the LLM monitoring phase on intercepted hosts (token budget, usage). */
    public static final String LLM = "llm";
    /** Name of the red-flag phase on intercepted hosts. */
    public static final String RED_FLAGS = "flags";
    /** Name of the capture phase on intercepted hosts (policy {@code capture}). */
    public static final String CAPTURE = "capture";
    /** Pipeline name of the forwarding phase. */
    public static final String FORWARD = "forward";
    /** Pipeline name of the tunnel set-up phase (explicit listener). */
    public static final String CONNECT = "connect";

    /** Longest request line accepted, in bytes. */
    public static final int MAX_INITIAL_LINE_BYTES = 16_384;
    /** Largest body chunk handed on at once, in bytes (bodies stream in chunks of at most this size). */
    public static final int MAX_CHUNK_BYTES = 65_536;

    private HttpPipeline() {
    }

    /** Returns the request decoder settings for {@code limits} (header block limit, chunk size, strict lines). */
    public static HttpDecoderConfig decoderConfig(Limits limits) {
        return new HttpDecoderConfig()
                .setMaxInitialLineLength(MAX_INITIAL_LINE_BYTES)
                .setMaxHeaderSize(limits.maxHeaderBytes())
                .setMaxChunkSize(MAX_CHUNK_BYTES)
                .setStrictLineParsing(true);
    }

    /** Returns a new strict request decoder for {@code limits} (Content-Length with Transfer-Encoding is refused). */
    public static ChannelHandler newDecoder(Limits limits) {
        return new StrictRequestDecoder(decoderConfig(limits));
    }

    /**
     * Adds decoder, encoder, {@code request}, {@code redact} (when non-null) and {@code forward}, in that
     * order, right after the handler named {@code after}, or at the front when {@code after} is null.
     *
     * @param pipeline the downstream connection's pipeline
     * @param after the name of the handler the HTTP phases follow, or null
     * @param limits the policy limits for the decoder
     * @param request the request phase
     * @param redact the redaction phase, or null
     * @param forward the forwarding phase
     * @throws IllegalArgumentException when {@code after} names no handler, or a name is taken
     */
    public static void install(ChannelPipeline pipeline, @Nullable String after, Limits limits,
                               ChannelHandler request, @Nullable ChannelHandler redact, ChannelHandler forward) {
        install(pipeline, after, limits, request, redact, null, forward);
    }

    /**
     * As {@link #install(ChannelPipeline, String, Limits, ChannelHandler, ChannelHandler, ChannelHandler)},
     * with the credential phase ({@link #CREDENTIALS}, when non-null) between redaction and the forwarder.
     */
    public static void install(ChannelPipeline pipeline, @Nullable String after, Limits limits,
                               ChannelHandler request, @Nullable ChannelHandler redact,
                               @Nullable ChannelHandler credentials, ChannelHandler forward) {
        String previous = after;
        previous = add(pipeline, previous, DECODER, newDecoder(limits));
        previous = add(pipeline, previous, ENCODER, new HttpResponseEncoder());
        installPhases(pipeline, previous, request, redact, credentials, forward);
    }

    /**
     * Adds the phases alone — {@code request}, {@code redact} (when non-null) and {@code forward} — right
     * after the handler named {@code after}: for a pipeline whose codec is not HTTP/1.1's, such as an
     * HTTP/2 stream's child channel (RFC 9113 streams as {@code HttpObject}s), which then runs the very
     * same request phases as an HTTP/1.1 connection.
     *
     * @throws IllegalArgumentException when {@code after} names no handler, or a name is taken
     */
    public static void installPhases(ChannelPipeline pipeline, @Nullable String after, ChannelHandler request,
                                     @Nullable ChannelHandler redact, ChannelHandler forward) {
        installPhases(pipeline, after, request, redact, null, forward);
    }

    /**
     * As {@link #installPhases(ChannelPipeline, String, ChannelHandler, ChannelHandler, ChannelHandler)},
     * with the credential phase ({@link #CREDENTIALS}, when non-null) between redaction and the forwarder.
     */
    public static void installPhases(ChannelPipeline pipeline, @Nullable String after, ChannelHandler request,
                                     @Nullable ChannelHandler redact, @Nullable ChannelHandler credentials,
                                     ChannelHandler forward) {
        String previous = add(pipeline, after, REQUEST, request);
        if (redact != null) {
            previous = add(pipeline, previous, REDACT, redact);
        }
        if (credentials != null) {
            previous = add(pipeline, previous, CREDENTIALS, credentials);
        }
        add(pipeline, previous, FORWARD, forward);
    }

    private static String add(ChannelPipeline pipeline, @Nullable String after, String name, ChannelHandler handler) {
        if (after == null) {
            pipeline.addFirst(name, handler);
        } else {
            pipeline.addAfter(after, name, handler);
        }
        return name;
    }
}
