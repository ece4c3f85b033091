package dev.sluice.rules.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class PathGlobTest {

    @ParameterizedTest(name = "{0} ~ {1}: {2}")
    @CsvSource(delimiter = '|', textBlock = """
            /@scope/**                 | /@scope                   | true
            /@scope/**                 | /@scope/                  | true
            /@scope/**                 | /@scope/a/b/c             | true
            /@scope/**                 | /@scopex/a                | false
            /@scope/**                 | /other/@scope/a           | false
            /a/*/c                     | /a/b/c                    | true
            /a/*/c                     | /a/b/x/c                  | false
            /a/*/c                     | /a/c                      | false
            /a/**/c                    | /a/c                      | true
            /a/**/c                    | /a/x/y/c                  | true
            /a/**/c                    | /a/x/y/d                  | false
            /v1beta/models/*:stream*   | /v1beta/models/g:streamGenerateContent | true
            /v1beta/models/*:stream*   | /v1beta/models/g:generate | false
            /v1/messages               | /v1/messages              | true
            /v1/messages               | /v1/messages/             | false
            /v1/messages               | /V1/messages              | false
            /**                        | /anything/at/all          | true
            /*                         | /one                      | true
            /*                         | /one/two                  | false
            /a/**                      | /a/../etc/passwd          | false
            /a/**                      | /a/./b                    | false
            /a/**                      | /a/%2e%2e/b               | false
            /a/**                      | /a/b%2Fc                  | false
            /a/**                      | /a/b%5cc                  | false
            /a/**                      | /a\\b                     | false
            /a/**                      | /a/b%20c                  | true
            /a/**                      | /a/..;/etc/passwd         | false
            /a/**                      | /a/.;x/b                  | false
            /a/**                      | /a/b%00.json              | false
            /a/**                      | /a/b;v=1/c                | true
            """)
    void matches(String glob, String path, boolean expected) {
        assertThat(PathGlob.validate(glob)).isNull();
        assertThat(PathGlob.matches(glob, path)).isEqualTo(expected);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "a/b", "/a**", "/**b/c", "/a/../b", "/a/./b", "/a?b", "/a#b", "/a b", "/a\\b", "/ä"})
    void invalid(String glob) {
        assertThat(PathGlob.validate(glob)).isNotNull().startsWith("(expected: ");
    }

    /** Deny rules: every form an origin may fold into the denied path matches. */
    @ParameterizedTest(name = "{0} ~loosely {1}: {2}")
    @CsvSource(delimiter = '|', textBlock = """
            /admin/**                  | /admin/x                  | true
            /admin/**                  | /%61dmin/x                | true
            /admin/**                  | /%61%64%6D%69%6E/x        | true
            /admin/**                  | //admin/x                 | true
            /admin/**                  | /admin;jsessionid=1/x     | true
            /admin/**                  | /ADMIN/x                  | true
            /admin/**                  | /Admin                    | true
            /admin/*.json              | /admin//a.json            | true
            /admin/**                  | /administrator/x          | false
            /admin/**                  | /public/admin             | false
            /admin/**                  | /%41dminx/y               | false
            /v1/messages               | /v1/messages/             | false
            /v1/messages               | /v1//messages             | true
            """)
    void matchesLoosely(String glob, String path, boolean expected) {
        assertThat(PathGlob.matchesLoosely(glob, path)).isEqualTo(expected);
    }
}
