package dev.sluice.proxy.request;

import dev.sluice.proxy.exchange.MisdirectedRequestException;
import dev.sluice.proxy.exchange.OriginFormException;
import dev.sluice.proxy.exchange.RequestFront;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import io.netty.handler.codec.http.HttpRequest;
import org.jspecify.annotations.Nullable;

/**
 * Where a request goes, in canonical form (design.md step 2), as its {@link RequestFront} places it: the
 * tunnel's authority for a request that opens one, else the HTTP target; or the refusal of a target
 * that does not place.
 *
 * @param target the canonical target; null when refused
 * @param httpTarget the canonical HTTP target of a request that opens no tunnel; null for a tunnel or when refused
 * @param refusal the refusal, or null when placed
 */
record Placement(@Nullable Target target, @Nullable HttpTarget httpTarget, @Nullable Refusal refusal) {

    /**
     * Places {@code request}. Refusals (none closes the connection by itself):
     * 400 {@code malformed_request} for an origin-form or asterisk-form target where absolute-form is
     * required; 400 {@code malformed_target} for a target with no canonical form; 421 {@code host_mismatch}
     * for a request that names another origin than its connection.
     */
    static Placement of(RequestFront front, HttpRequest request) {
        try {
            if (front.opensTunnel(request)) {
                return new Placement(front.tunnelTarget(request), null, null);
            }
            HttpTarget http = front.target(request);
            return new Placement(http.target(), http, null);
        } catch (OriginFormException e) {
            return refused(Decision.deny(Reason.MALFORMED_REQUEST, BuiltinRules.HTTP_REQUEST_TARGET), e);
        } catch (MalformedTargetException e) {
            return refused(Decision.deny(Reason.MALFORMED_TARGET, BuiltinRules.TARGET), e);
        } catch (MisdirectedRequestException e) {
            return refused(Decision.deny(Reason.HOST_MISMATCH, BuiltinRules.INTERCEPT_HOST), e);
        }
    }

    private static Placement refused(Decision denial, Exception cause) {
        return new Placement(null, null, new Refusal(denial, cause.getMessage(), false));
    }
}
