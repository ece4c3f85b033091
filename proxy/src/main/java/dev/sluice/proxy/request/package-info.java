/**
 * The request phase: identify, canonicalise, decide, hand off ({@code ExplicitRequestHandler}, which keeps
 * the connection's state, and its parts: the fronts, {@code HeadScreen}, {@code RequestAdmission},
 * {@code Placement}, {@code Handoff}, {@code ApprovalHold}, {@code RequestQueue}, {@code RequestRecords},
 * {@code Refusal}).
 *
 * <p>Answers of the request phase ({@code ExplicitRequestHandler}), each with an audit record, and the part
 * that gives each:
 * <table>
 *   <caption>Refusals of the request phase</caption>
 *   <tr><td>400 malformed_request</td><td>unparseable request, origin-form or asterisk-form
 *       request-target, a version other than HTTP/1.0 and 1.1, a Transfer-Encoding other than
 *       {@code chunked}; the connection closes ({@code DecoderFailures}, {@code Placement})</td></tr>
 *   <tr><td>400 ambiguous_framing</td><td>Content-Length with Transfer-Encoding, a repeated
 *       Content-Length or Transfer-Encoding, a chunked body whose framing is not exactly RFC 9112
 *       section 7.1 ({@code http.StrictRequestDecoder}); nothing more of the request is forwarded (the
 *       upstream connection of an exchange already under way is closed before the request's end)
 *       and the connection closes ({@code DecoderFailures}, the handler for a body)</td></tr>
 *   <tr><td>400 malformed_target</td><td>a request-target that has no canonical form ({@code Placement})</td></tr>
 *   <tr><td>421 host_mismatch</td><td>inside an intercepted tunnel, a request naming another origin
 *       ({@code Placement})</td></tr>
 *   <tr><td>407 unknown_extension</td><td>no or wrong Proxy-Authorization and no {@code default}
 *       extension; Proxy-Authorization repeated or a list ({@code SingleFields}), whatever the
 *       policy</td></tr>
 *   <tr><td>400 malformed_request</td><td>Host repeated or a list ({@code SingleFields})</td></tr>
 *   <tr><td>403</td><td>the policy denies the name, port, method or path ({@code Decider}), or an
 *       approval denies a held request ({@code ApprovalHold})</td></tr>
 *   <tr><td>431 header_too_large</td><td>header block over {@code limits.max_header_bytes}
 *       ({@code DecoderFailures})</td></tr>
 *   <tr><td>501 upgrade_not_supported</td><td>an allowed request that asks for a protocol upgrade
 *       other than a well-formed WebSocket handshake ({@code http.WebSocketUpgrade.problem}: h2c,
 *       {@code TLS/1.0}, an unknown token, {@code upgrade} named in {@code Connection} alone);
 *       nothing is forwarded ({@code Handoff})</td></tr>
 *   <tr><td>403 websocket_refused</td><td>a WebSocket handshake to an intercepted host whose
 *       {@code websocket} is {@code refuse} ({@code Handoff})</td></tr>
 *   <tr><td>503 audit_unavailable</td><td>the audit log cannot write (fail closed; {@code RequestAdmission})</td></tr>
 *   <tr><td>503 connection_limit, 429 egress_budget</td><td>the extension's connection cap or egress
 *       budget ({@code RequestAdmission})</td></tr>
 * </table>
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.request;

import org.jspecify.annotations.NullMarked;
