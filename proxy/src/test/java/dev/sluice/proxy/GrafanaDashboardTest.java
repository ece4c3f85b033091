package dev.sluice.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * docker/grafana-dashboard.json parses, charts the metrics of design.md "Metrics" and of LLM monitoring,
 * and names no metric Sluice does not export.
 */
class GrafanaDashboardTest {

    private static Path dashboard() {
        Path fromModule = Path.of("..", "docker", "grafana-dashboard.json");
        return Files.exists(fromModule) ? fromModule : Path.of("docker", "grafana-dashboard.json");
    }

    @Test
    void isAValidDashboardOverAPrometheusDatasourceVariable() throws Exception {
        JsonNode dash = new ObjectMapper().readTree(dashboard().toFile());
        assertThat(dash.get("schemaVersion").asInt()).isBetween(36, 41);
        assertThat(dash.get("uid").asText()).isNotBlank();
        JsonNode variables = dash.get("templating").get("list");
        JsonNode datasource = variables.get(0);
        assertThat(datasource.get("type").asText()).isEqualTo("datasource");
        assertThat(datasource.get("query").asText()).isEqualTo("prometheus");

        Set<Integer> ids = new HashSet<>();
        List<String> exprs = new ArrayList<>();
        for (JsonNode panel : dash.get("panels")) {
            assertThat(ids.add(panel.get("id").asInt())).as("unique panel id").isTrue();
            JsonNode grid = panel.get("gridPos");
            assertThat(grid.get("x").asInt() + grid.get("w").asInt()).isLessThanOrEqualTo(24);
            if (panel.get("type").asText().equals("row")) {
                continue;
            }
            assertThat(panel.get("datasource").get("uid").asText()).isEqualTo("${datasource}");
            assertThat(panel.get("targets")).isNotEmpty();
            panel.get("targets").forEach(t -> exprs.add(t.get("expr").asText()));
        }
        assertThat(exprs).contains(
                "sum by (extension) (rate(sluice_egress_bytes_total{extension=~\"$extension\"}[5m]))",
                "sum by (extension) (rate(sluice_ingress_bytes_total{extension=~\"$extension\"}[5m]))",
                "sum by (reason) (rate(sluice_requests_total{decision=\"deny\",extension=~\"$extension\"}[5m]))");
        String all = String.join("\n", exprs);
        for (String metric : List.of("sluice_requests_total", "sluice_redactions_total", "sluice_pin_failures_total",
                "sluice_active_connections", "sluice_policy_reloads_total", "sluice_audit_write_failures_total",
                "sluice_request_duration_seconds_bucket", "sluice_red_flags_total", "sluice_llm_tokens_total",
                "sluice_credential_injections_total", "sluice_captures_total", "sluice_alert_webhook_failures_total")) {
            assertThat(all).contains(metric);
        }
        assertThat(all).contains("sluice_requests_total{reason=\"token_budget\"");
        Set<String> exported = exportedNames();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\bsluice_[a-z0-9_]+").matcher(all);
        int seen = 0;
        while (m.find()) {
            seen++;
            assertThat(exported).as("%s names a metric Sluice exports (MetricNames)", m.group()).contains(m.group());
        }
        assertThat(seen).isGreaterThan(10);
    }

    /**
     * The Prometheus names of every metric in {@link dev.sluice.proxy.metrics.MetricNames}: Micrometer writes
     * {@code sluice.red.flags} as {@code sluice_red_flags_total} (a counter), a gauge without a suffix, a
     * timer as {@code _seconds_bucket}, {@code _seconds_count}, {@code _seconds_sum} and {@code _seconds_max}.
     */
    private static Set<String> exportedNames() throws IllegalAccessException {
        Set<String> names = new HashSet<>();
        for (java.lang.reflect.Field f : dev.sluice.proxy.metrics.MetricNames.class.getFields()) {
            if (f.getType() != String.class || !java.lang.reflect.Modifier.isStatic(f.getModifiers())) {
                continue;
            }
            String value = (String) f.get(null);
            if (!value.startsWith("sluice.")) {
                continue;
            }
            String base = value.replace('.', '_');
            for (String suffix : List.of("", "_total", "_seconds_bucket", "_seconds_count", "_seconds_sum",
                    "_seconds_max")) {
                names.add(base + suffix);
            }
        }
        assertThat(names).contains("sluice_red_flags_total", "sluice_llm_tokens_total");
        return names;
    }
}
