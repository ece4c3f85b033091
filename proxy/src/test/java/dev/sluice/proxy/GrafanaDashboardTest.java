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

/** docker/grafana-dashboard.json parses, and charts the metrics of design.md "Metrics". */
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
                "sluice_request_duration_seconds_bucket")) {
            assertThat(all).contains(metric);
        }
    }
}
