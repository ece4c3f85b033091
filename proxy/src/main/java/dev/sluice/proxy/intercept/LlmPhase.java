package dev.sluice.proxy.intercept;

import dev.sluice.proxy.http.HttpPipeline;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Limits;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

/**
 * The LLM phase of an intercepted tunnel, between the request phase and the redaction phase.
 *
 * <p>Requests: when {@code limits.token_budget} is set and the extension has used its tokens in the
 * current window, the request is refused with 429 {@code token_budget} (rule {@code limits.token_budget},
 * one audit record, the connection closes as after any refusal of the forwarder). A response already
 * streaming is never cut: the budget is checked only when a request starts.
 *
 * <p>Responses: every JSON or {@code text/event-stream} response is read as it is relayed, after undoing
 * {@code gzip} / {@code deflate} (at most {@code limits.max_inspected_body} decoded bytes are read), by a
 * {@link dev.sluice.rules.llm.UsageScanner} (in the response's one reader, {@link ResponseRead}, which the
 * redaction and red-flag phases share); when the body ends, the model goes to {@code llm.model}, the token counts to
 * {@code llm.usage.input_tokens} / {@code output_tokens}, to {@code sluice_llm_tokens_total
 * {extension,host,kind}} and to the extension's token account. Nothing of the response is held or
 * changed. A response that breaks off before its end is not counted.
 */
final class LlmPhase extends ChannelInboundHandlerAdapter {

    /** Pipeline name. */
    static final String NAME = HttpPipeline.LLM;

    private final ProxyContext context;

    LlmPhase(ProxyContext context) {
        this.context = context;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ForwardRequest request)) {
            ctx.fireChannelRead(msg);
            return;
        }
        String extension = extension(request.audit());
        Limits limits = request.policy().limits();
        if (context.budgets().tokensExhausted(extension, limits.tokenBudget(), limits.tokenBudgetWindow())) {
            ctx.fireChannelRead(new ExchangeControl.Refuse(request,
                    Decision.deny(Reason.TOKEN_BUDGET, BuiltinRules.TOKEN_BUDGET),
                    "token budget spent: " + limits.tokenBudget() + " tokens per " + limits.tokenBudgetWindow()));
            return;
        }
        ctx.fireChannelRead(ResponseRead.of(ctx.channel(), request,
                read -> read.usage(context, request.target().target().host(), limits.tokenBudgetWindow())));
    }

    private static String extension(AuditEvent audit) {
        String name = audit.extensionOrNull();
        return name == null ? Extension.UNIDENTIFIED : name;
    }
}
