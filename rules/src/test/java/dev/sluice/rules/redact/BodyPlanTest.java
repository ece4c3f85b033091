package dev.sluice.rules.redact;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class BodyPlanTest {

    @ParameterizedTest(name = "{0} -> binary {1}")
    @CsvSource(delimiter = '|', nullValues = "NULL", value = {
            "NULL | false",
            "'' | false",
            "text/plain | false",
            "text/plain; charset=utf-8 | false",
            "TEXT/HTML | false",
            "text/event-stream | false",
            "application/json | false",
            "application/vnd.api+json; charset=utf-8 | false",
            "application/x-ndjson | false",
            "application/x-www-form-urlencoded | false",
            "multipart/form-data; boundary=xyz | false",
            "application/x-git-receive-pack-request | true",
            "application/x-git-upload-pack-request | true",
            "application/octet-stream | true",
            "application/zip | true",
            "image/png | true",
            "application/xml | true",
            "garbage | true",
    })
    void classifiesByMediaType(String contentType, boolean binary) {
        assertThat(BodyPlan.isBinary(contentType)).isEqualTo(binary);
    }

    @Test
    void binaryBodiesGetTheBinaryActionAndPlainFormat() {
        BodyPlan git = BodyPlan.of("application/x-git-receive-pack-request", RedactionAction.REDACT,
                RedactionAction.BLOCK);
        assertThat(git).isEqualTo(new BodyPlan(BodyFormat.PLAIN, RedactionAction.BLOCK, true));
        assertThat(git.mayRewrite()).isFalse();
        assertThat(BodyPlan.of("application/octet-stream", RedactionAction.BLOCK, RedactionAction.REPORT).action())
                .isEqualTo(RedactionAction.REPORT);
        BodyPlan json = BodyPlan.of("application/json", RedactionAction.REDACT, RedactionAction.BLOCK);
        assertThat(json).isEqualTo(new BodyPlan(BodyFormat.JSON, RedactionAction.REDACT, false));
        assertThat(json.mayRewrite()).isTrue();
        assertThat(BodyPlan.of(null, RedactionAction.REDACT, RedactionAction.BLOCK))
                .isEqualTo(new BodyPlan(BodyFormat.PLAIN, RedactionAction.REDACT, false));
        assertThatThrownBy(() -> BodyPlan.of("image/png", RedactionAction.REDACT, RedactionAction.REDACT))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
