package dev.sluice.proxy.testing;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest;
import io.opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse;
import io.opentelemetry.proto.common.v1.AnyValue;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.logs.v1.LogRecord;
import io.opentelemetry.proto.logs.v1.ResourceLogs;
import io.opentelemetry.proto.logs.v1.ScopeLogs;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.zip.GZIPInputStream;

/**
 * A small OTLP/HTTP logs receiver on 127.0.0.1 (an ephemeral port): accepts {@code POST /v1/logs} with an
 * {@code application/x-protobuf} {@code ExportLogsServiceRequest} (opentelemetry-proto), gzip or not,
 * decodes it and keeps every log record with its resource and scope. While {@link #refuse(int)} is set
 * it answers that status instead (400 is not retried by the SDK's exporter), keeping nothing.
 */
public final class OtlpReceiver implements AutoCloseable {

    /** One received log record, flattened: resource attributes, scope name, attributes (string values). */
    public record Received(Map<String, String> resource, String scope, LogRecord record, Map<String, String> attributes) {
        public String attribute(String key) {
            return attributes.get(key);
        }

        public String body() {
            return record.getBody().getStringValue();
        }
    }

    private final HttpServer server;
    private final ConcurrentLinkedQueue<Received> received = new ConcurrentLinkedQueue<>();
    private final AtomicInteger requests = new AtomicInteger();
    private volatile int refuseStatus;

    public OtlpReceiver() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
        server.createContext("/v1/logs", this::handle);
        server.start();
    }

    /** The logs endpoint, for {@code otel.exporter.otlp.logs.endpoint}. */
    public String logsEndpoint() {
        return "http://127.0.0.1:" + server.getAddress().getPort() + "/v1/logs";
    }

    /** Answers every export with {@code status} from now on (0: accept again). */
    public void refuse(int status) {
        refuseStatus = status;
    }

    /** Returns every record received so far, in arrival order. */
    public List<Received> records() {
        return new ArrayList<>(received);
    }

    /** Returns how many export requests arrived (accepted or refused). */
    public int requests() {
        return requests.get();
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            requests.incrementAndGet();
            if (!"POST".equals(exchange.getRequestMethod())
                    || !"application/x-protobuf".equals(exchange.getRequestHeaders().getFirst("Content-Type"))) {
                exchange.sendResponseHeaders(415, -1);
                return;
            }
            InputStream in = exchange.getRequestBody();
            if ("gzip".equals(exchange.getRequestHeaders().getFirst("Content-Encoding"))) {
                in = new GZIPInputStream(in);
            }
            ExportLogsServiceRequest request = ExportLogsServiceRequest.parseFrom(in.readAllBytes());
            int refuse = refuseStatus;
            if (refuse != 0) {
                exchange.sendResponseHeaders(refuse, -1);
                return;
            }
            for (ResourceLogs rl : request.getResourceLogsList()) {
                Map<String, String> resource = strings(rl.getResource().getAttributesList());
                for (ScopeLogs sl : rl.getScopeLogsList()) {
                    for (LogRecord r : sl.getLogRecordsList()) {
                        received.add(new Received(resource, sl.getScope().getName(), r, strings(r.getAttributesList())));
                    }
                }
            }
            byte[] ok = ExportLogsServiceResponse.getDefaultInstance().toByteArray();
            exchange.getResponseHeaders().set("Content-Type", "application/x-protobuf");
            exchange.sendResponseHeaders(200, ok.length == 0 ? -1 : ok.length);
            if (ok.length > 0) {
                exchange.getResponseBody().write(ok);
            }
        }
    }

    private static Map<String, String> strings(List<KeyValue> attributes) {
        return attributes.stream().collect(Collectors.toMap(KeyValue::getKey, kv -> show(kv.getValue()), (a, b) -> b));
    }

    private static String show(AnyValue v) {
        return switch (v.getValueCase()) {
            case STRING_VALUE -> v.getStringValue();
            case INT_VALUE -> Long.toString(v.getIntValue());
            case BOOL_VALUE -> Boolean.toString(v.getBoolValue());
            case DOUBLE_VALUE -> Double.toString(v.getDoubleValue());
            case ARRAY_VALUE -> v.getArrayValue().getValuesList().stream().map(OtlpReceiver::show)
                    .collect(Collectors.joining(","));
            default -> v.toString();
        };
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
