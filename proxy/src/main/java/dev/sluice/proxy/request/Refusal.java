package dev.sluice.proxy.request;

import org.jspecify.annotations.Nullable;
import dev.sluice.proxy.http.Refusals;
import dev.sluice.rules.decision.Decision;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import java.util.Objects;

/**
 * A refusal the request phase (or the transparent listener's tunnel phase) answers itself: the decision (reason, rule id), a short detail for the
 * record's {@code error} (never a secret), and whether the connection must close after the answer.
 *
 * @param decision the denial
 * @param detail the record's error text, or null
 * @param close whether the connection closes after the answer (a request with a body closes anyway)
 */
public record Refusal(Decision decision, @Nullable String detail, boolean close) {

    /** Checks that {@code decision} is given. */
    public Refusal {
        Objects.requireNonNull(decision, "decision");
    }

    /**
     * Returns how the connection ends when this refusal answers {@code request}: a request whose body is
     * still coming is answered at once, its body read and dropped, then the connection closes
     * ({@link Refusals.Ending#CLOSE_AFTER_BODY}: a close now would reset the connection and could lose the
     * answer); a head that failed to decode (its framing cannot be trusted), a refusal that closes, or a
     * request without keep-alive closes at once; anything else keeps the connection.
     */
    public Refusals.Ending ending(HttpRequest request) {
        boolean failed = request.decoderResult().isFailure();
        // A failed head closes anyway (and its Content-Length may not even parse).
        boolean hasBody = !failed
                && (HttpUtil.isTransferEncodingChunked(request) || HttpUtil.getContentLength(request, 0L) > 0);
        if (hasBody) {
            return Refusals.Ending.CLOSE_AFTER_BODY;
        }
        return close || failed || !HttpUtil.isKeepAlive(request) ? Refusals.Ending.CLOSE : Refusals.Ending.KEEP_OPEN;
    }
}
