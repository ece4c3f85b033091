package dev.sluice.proxy.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.proxy.admin.AdminToken;
import dev.sluice.rules.policy.Policy;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code sluice approvals list | allow ID [--scope S] [--by WHO] | deny ID [--by WHO]}: answers the requests
 * that a running Sluice holds for {@code approvals.backend: admin}, through its admin listener
 * ({@code GET /approvals}, {@code POST /approvals/ID/allow|deny}) with the bearer token from the data dir
 * ({@link AdminToken}). Exit codes: 0 done, 1 nothing waits under ID / the scope is not offered / Sluice
 * cannot be reached, 2 a usage error.
 */
@Command(name = "approvals", description = "List and answer the requests held for approval (approvals.backend: admin).",
        subcommands = {ApprovalsCommand.List.class, ApprovalsCommand.Allow.class, ApprovalsCommand.Deny.class})
final class ApprovalsCommand {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** What every approvals subcommand needs: where the admin listener is, and the token. */
    static final class Target {
        @Mixin
        CommonOptions common;

        @Option(names = "--admin", paramLabel = "HOST:PORT",
                description = "The running Sluice's admin listener. Default: the policy's listen.admin.")
        String admin;

        URI base(CliCommand command) throws Exception {
            String address = admin;
            if (address == null) {
                Policy policy = common.loadPolicy();
                InetSocketAddress a = policy.listen().admin();
                if (a == null) {
                    throw command.usage("--admin: missing, and the policy has no listen.admin");
                }
                String host = a.getAddress() == null || a.getAddress().isAnyLocalAddress() ? "127.0.0.1"
                        : a.getAddress().getHostAddress();
                address = (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + a.getPort();
            }
            try {
                URI uri = new URI("http://" + address);
                if (uri.getHost() == null || uri.getPort() < 1) {
                    throw new java.net.URISyntaxException(address, "no host or port");
                }
                return uri;
            } catch (java.net.URISyntaxException e) {
                throw command.usage("--admin: " + address + " (expected: HOST:PORT)");
            }
        }

        HttpResponse<String> send(CliCommand command, String method, String path, String body) throws Exception {
            URI base = base(command);
            String token;
            try {
                token = AdminToken.read(common.dataDir);
            } catch (IOException e) {
                throw new CliFailure("no admin token in " + common.dataDir + " (" + e.getMessage()
                        + "): give --data-dir the one the running Sluice uses");
            }
            // Never through a proxy: the admin listener is the operator's, on loopback.
            HttpClient client = HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY)
                    .connectTimeout(Duration.ofSeconds(5)).build();
            HttpRequest.Builder request = HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofSeconds(30))
                    .header("Authorization", "Bearer " + token);
            request = body == null ? request.GET() : request.header("Content-Type", "application/json")
                    .method(method, HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
            try {
                return client.send(request.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new CliFailure("cannot reach the admin listener at " + base + ": " + e);
            }
        }
    }

    /** A failure to report on stderr with exit code 1. */
    static final class CliFailure extends Exception {
        CliFailure(String message) {
            super(message);
        }
    }

    /** Runs {@code body}, printing a {@link CliFailure} as one line and exiting 1. */
    private static int run(CliCommand command, Callable<Integer> body) throws Exception {
        try {
            return body.call();
        } catch (CliFailure f) {
            command.err().println("sluice: " + f.getMessage());
            return 1;
        }
    }

    @Command(name = "list", description = "Print the held requests, oldest first.")
    static final class List extends CliCommand implements Callable<Integer> {
        @Mixin
        Target target;
        @Option(names = "--format", defaultValue = "table", description = "table or json (default: table).")
        String format;

        @Override
        public Integer call() throws Exception {
            checkFormat(format);
            return run(this, () -> {
                HttpResponse<String> r = target.send(this, "GET", "/approvals", null);
                if (r.statusCode() != 200) {
                    throw new CliFailure("admin listener answered " + r.statusCode() + ": " + r.body().trim());
                }
                JsonNode items = JSON.readTree(r.body()).path("approvals");
                PrintWriter out = out();
                if (format.equals("json")) {
                    out.println(items.toString());
                    return 0;
                }
                if (items.isEmpty()) {
                    out.println("no requests are held");
                    return 0;
                }
                out.printf("%-16s %-16s %-40s %-8s %-20s %s%n", "ID", "EXTENSION", "TARGET", "METHOD", "EXPIRES", "SCOPES");
                for (JsonNode q : items) {
                    String what = q.path("host").asText() + ":" + q.path("port").asInt()
                            + (q.path("path").isTextual() ? q.path("path").asText() : "");
                    java.util.List<String> scopes = new java.util.ArrayList<>();
                    q.path("scopes").forEach(s -> scopes.add(s.asText()));
                    out.printf("%-16s %-16s %-40s %-8s %-20s %s%n", q.path("id").asText(), q.path("extension").asText(),
                            what, q.path("method").isTextual() ? q.path("method").asText() : "CONNECT",
                            q.path("expires_at").asText(), String.join(",", scopes));
                }
                return 0;
            });
        }
    }

    @Command(name = "allow", description = "Let the held request ID go, with a scope (once, session, always).")
    static final class Allow extends CliCommand implements Callable<Integer> {
        @Mixin
        Target target;
        @Parameters(index = "0", paramLabel = "ID", description = "The held request's id (from `sluice approvals list`).")
        String id;
        @Option(names = "--scope", defaultValue = "once", description = "once, session or always (default: once).")
        String scope;
        @Option(names = "--by", defaultValue = "${sys:user.name}", description = "Who answers, for the audit record "
                + "(default: the user name).")
        String by;

        @Override
        public Integer call() throws Exception {
            if (!java.util.Set.of("once", "session", "always").contains(scope)) {
                throw usage("--scope: " + scope + " (expected: once, session or always)");
            }
            return answer(this, target, id, "allow", JSON.createObjectNode().put("scope", scope).put("by", by));
        }
    }

    @Command(name = "deny", description = "Refuse the held request ID.")
    static final class Deny extends CliCommand implements Callable<Integer> {
        @Mixin
        Target target;
        @Parameters(index = "0", paramLabel = "ID", description = "The held request's id (from `sluice approvals list`).")
        String id;
        @Option(names = "--by", defaultValue = "${sys:user.name}", description = "Who answers, for the audit record "
                + "(default: the user name).")
        String by;

        @Override
        public Integer call() throws Exception {
            return answer(this, target, id, "deny", JSON.createObjectNode().put("by", by));
        }
    }

    private static int answer(CliCommand command, Target target, String id, String verb, ObjectNode body)
            throws Exception {
        if (!id.matches("[A-Za-z0-9_-]{1,64}")) {
            throw command.usage("ID: " + id + " (expected: an id from `sluice approvals list`)");
        }
        return run(command, () -> {
            HttpResponse<String> r = target.send(command, "POST", "/approvals/" + id + "/" + verb, body.toString());
            if (r.statusCode() == 200) {
                JsonNode a = JSON.readTree(r.body());
                command.out().println(verb.equals("allow") ? "allowed " + id + " (scope " + a.path("scope").asText() + ")"
                        : "denied " + id);
                return 0;
            }
            throw new CliFailure(r.body().trim());
        });
    }
}
