package dev.sluice.rules.redact;

import static dev.sluice.rules.redact.DetectorShapes.checked;

import java.util.List;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * Detectors for secrets without a vendor prefix, found by the context they stand in: a command line
 * ({@code curl -u}), an HTTP authorization line, a credentials file ({@code .netrc}, {@code .pgpass},
 * Docker's {@code config.json}), an XML element or key/value pair named like a secret, a URL, or an AWS
 * access key id nearby. Registered in {@link BuiltinDetectors#all()} after the vendor formats (a vendor
 * format inside such a context is named after the vendor) and before the generic assignment.
 *
 * <p>Every value goes through a gate before it is reported: placeholders ({@code changeme},
 * {@code ${VAR}}, {@code <your-key>}, {@code xxxx}), documented examples, code expressions and public
 * values are left alone (see {@link DetectorShapes#plausibleSecret}).
 */
public final class ContextDetectors {

    private ContextDetectors() {
    }

    private static Detector keywordFirst(String id, String description, List<String> keywords, String regex,
                                         int maxLength, double minEntropy, Predicate<String> validator, Precheck precheck) {
        return new Detector(id, description, keywords, Pattern.compile(regex), 1, minEntropy, checked(validator), 0,
                maxLength, true, precheck);
    }

    /** A password: not a placeholder; something other than digits only (a uid:gid pair is not a credential). */
    private static boolean passwordLike(String s) {
        return DetectorShapes.notPlaceholder(s) && !DetectorShapes.looksLikeCode(s) && !s.chars().allMatch(Character::isDigit);
    }

    /**
     * Password of {@code curl -u user:password} / {@code --user user:password} / {@code --user=...}: the part
     * after the first colon (user ids made only of digits, as in {@code docker run -u 1000:1000}, are not
     * read as users). Source: curl manual, {@code -u, --user <user:password>}
     * (https://curl.se/docs/manpage.html#-u).
     */
    public static final Detector CURL_USER_PASSWORD = keywordFirst("curl-user-password",
            "password of curl -u / --user user:password", List.of("-u", "--user"),
            "(?:-u|--user)(?:\\s{1,4}+|=)\\\\?[\"']?(?![0-9]{1,10}:)[^\\s:\"'\\\\$]{1,64}+:([^\\s\"'\\\\]{3,128}+)",
            210, 1.5, ContextDetectors::passwordLike, null);

    /**
     * The credential of an HTTP authorization line anywhere in text (shell output, logs, code, headers
     * in JSON): {@code Authorization: Bearer ...}, {@code Authorization: Token ...} (and {@code Bot},
     * {@code SSWS}, {@code ApiKey} schemes), {@code Authorization: <credential>}, and a bare
     * {@code Bearer <token>}. Values of at least 16 characters that pass the gate, 3.0 bits of entropy per
     * character. Source: RFC 9110 section 11.6.2 ({@code Authorization}), RFC 6750 section 2.1 (the
     * {@code Bearer} scheme).
     */
    public static final Detector AUTHORIZATION_CREDENTIAL = keywordFirst("authorization-credential",
            "credential of an Authorization / Bearer line", List.of("authorization", "bearer"),
            "(?:(?i:authorization)\\\\?[\"']?\\s{0,4}+[:=]\\s{0,4}+\\\\?[\"']?"
                    + "(?:(?i:bearer|token|bot|ssws|apikey|api-key|key)\\s{1,4}+)?|(?i:bearer)\\s{1,4}+)"
                    + "([A-Za-z0-9._~+/-]{16,2000}+={0,2})(?![A-Za-z0-9._~+/=-])",
            2060, 3.0, DetectorShapes::plausibleSecret, null);

    /**
     * HTTP Basic credentials, {@code Basic <base64 of user:password>}, anywhere in text; the base64 run is
     * decoded and reported only when it is printable {@code user:password} text. Source: RFC 7617, "The
     * 'Basic' HTTP Authentication Scheme", section 2.
     */
    public static final Detector BASIC_AUTH_CREDENTIAL = keywordFirst("basic-auth-credential",
            "HTTP Basic credentials (Basic base64(user:password))", List.of("basic"),
            "(?i:basic)\\s{1,4}+([A-Za-z0-9+/]{8,1000}={0,2})(?![A-Za-z0-9+/=])",
            1020, 0, DetectorShapes::base64UserPassword, null);

    /**
     * {@code .netrc} entries: {@code machine <host> [login <user>] [account ...] password <password>}, on one
     * line or several. Source: GNU Inetutils manual, "The .netrc file"
     * (https://www.gnu.org/software/inetutils/manual/html_node/The-_002enetrc-file.html).
     */
    public static final Detector NETRC_PASSWORD = keywordFirst("netrc-password", "password of a .netrc machine entry",
            List.of("machine"),
            "machine\\s{1,8}+[^\\s]{1,253}+(?:\\s{1,8}+(?:login|account|port|protocol)\\s{1,8}+[^\\s]{1,128}+){0,3}"
                    + "\\s{1,8}+password\\s{1,8}+([^\\s]{3,256}+)",
            700, 0, ContextDetectors::passwordLike, null);

    /**
     * PostgreSQL password file ({@code .pgpass}) lines, {@code host:port:database:user:password}, found at
     * the usual ports ({@code :5432:}, {@code :6432:}) and the {@code :*:} wildcard. Source: PostgreSQL
     * documentation, "The Password File" (https://www.postgresql.org/docs/current/libpq-pgpass.html).
     */
    public static final Detector PGPASS_PASSWORD = new Detector("pgpass-password", "password of a .pgpass line",
            List.of(":5432:", ":6432:", ":*:"),
            Pattern.compile("(?m)^[^\\s:#]{1,100}:(?:[0-9]{1,5}|\\*):[^\\s:]{1,63}:[^\\s:]{1,63}:([^\\s]{3,128})$"),
            1, 0, checked(ContextDetectors::passwordLike), 110, 370, false);

    /**
     * XML and HTML elements named like a secret: {@code <password>...</password>}, {@code <apiKey>},
     * {@code <clientSecret>}, {@code <token>}, {@code <passphrase>} and the like (CDATA sections too).
     * Source: XML 1.0 (Fifth Edition), sections 3.1 (start and end tags) and 2.7 (CDATA sections); the
     * names are those of common configuration files (Maven {@code settings.xml}, .NET, Spring).
     */
    public static final Detector XML_SECRET_ELEMENT = new Detector("xml-secret-element",
            "XML element named like a secret (<password>, <apiKey>, ...)",
            List.of("<password", "<passwd", "<secret", "<apikey", "<api_key", "<api-key", "<token", "<accesskey",
                    "<access_key", "<authtoken", "<auth_token", "<clientsecret", "<client_secret", "<passphrase",
                    "<privatekey", "<private_key"),
            Pattern.compile("<((?i:password|passwd|secret|api[_-]?key|token|access[_-]?key|auth[_-]?token|client[_-]?secret"
                    + "|passphrase|private[_-]?key)[A-Za-z0-9_.-]{0,24}+)(?:\\s[^<>]{0,200}+)?>\\s{0,8}+(?:<!\\[CDATA\\[)?"
                    + "([^<>\\s\\]]{6,512}+)(?:\\]\\]>)?\\s{0,8}+</\\1>"),
            2, 0, checked(DetectorShapes::plausibleSecret), 0, 800, false);

    /**
     * XML key/value settings whose key names a secret: {@code <add key="ApiKey" value="..."/>} (.NET
     * {@code appSettings}), {@code <entry key="db.password" value="..."/>}, {@code <setting name=...
     * value=...>}, {@code <param>}, {@code <property>}. Source: Microsoft Learn, "appSettings element" and
     * XML 1.0 section 3.1 (attributes).
     */
    public static final Detector XML_SECRET_ATTRIBUTE = keywordFirst("xml-secret-attribute",
            "value= of an XML setting whose key names a secret", List.of("<add ", "<entry ", "<setting ", "<param ", "<property "),
            "<(?:add|entry|setting|param|parameter|property)\\s{1,4}+(?:key|name)\\s{0,2}=\\s{0,2}[\"'][^\"'<>]{0,40}"
                    + "(?i:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|credential|passphrase)[^\"'<>]{0,40}[\"']"
                    + "\\s{1,4}+value\\s{0,2}=\\s{0,2}[\"']([^\"'<>]{6,512})[\"']",
            660, 0, DetectorShapes::plausibleSecret, null);

    /**
     * Hadoop-style XML properties, {@code <name>...secret.key</name> <value>...</value>} (core-site.xml's
     * {@code fs.s3a.secret.key}, {@code ...password}, {@code ...token}). Source: Apache Hadoop,
     * "Configuration" (https://hadoop.apache.org/docs/stable/api/org/apache/hadoop/conf/Configuration.html).
     */
    public static final Detector XML_SECRET_PROPERTY = keywordFirst("xml-secret-property",
            "<value> of an XML property whose <name> names a secret", List.of("<name>"),
            "<name>\\s{0,4}+[^<>]{0,60}(?i:password|secret|token|access\\.key|secret\\.key|api\\.key|credential)[^<>]{0,40}"
                    + "</name>\\s{0,40}+<value>\\s{0,4}+([^<>\\s]{6,512}+)\\s{0,4}+</value>",
            700, 0, DetectorShapes::plausibleSecret, null);

    /** At {@code auth}: a quote (or an escaping backslash) follows the four letters, as the pattern needs. */
    private static boolean quoteAfterAuth(byte[] text, int start, int limit) {
        int i = start + 4;
        return i >= limit || text[i] == '"' || text[i] == '\'' || text[i] == '\\';
    }

    /**
     * Docker client configuration ({@code ~/.docker/config.json}, {@code .dockerconfigjson}): the
     * {@code "auth"} member of an {@code auths} entry, base64 of {@code user:password}, reported when it
     * decodes so. Source: Docker documentation, "docker login", credential stores and the
     * {@code config.json} format (https://docs.docker.com/reference/cli/docker/login/).
     */
    public static final Detector DOCKER_CONFIG_AUTH = keywordFirst("docker-config-auth",
            "auths entry of a Docker config.json (base64 user:password)", List.of("auth"),
            "auth\\\\?[\"']\\s{0,4}+:\\s{0,4}+\\\\?[\"']([A-Za-z0-9+/]{8,2000}={0,2})\\\\?[\"']",
            2030, 0, DetectorShapes::base64UserPassword, ContextDetectors::quoteAfterAuth);

    /** At {@code ://}: 20 or more userinfo characters, then '@'. */
    private static boolean tokenUserinfoFollows(byte[] text, int start, int limit) {
        int end = Math.min(limit, start + 3 + 256);
        for (int i = start + 3; i < end; i++) {
            byte b = text[i];
            if (b == '@') {
                return i - start - 3 >= 20;
            }
            if (!((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '_' || b == '.'
                    || b == '~' || b == '-')) {
                return false;
            }
        }
        return end >= limit;
    }

    /** A token standing as the whole userinfo of a URL: high entropy, with a digit and a letter. */
    private static boolean tokenUserinfo(String s) {
        return DetectorShapes.plausibleSecret(s) && s.chars().anyMatch(Character::isDigit)
                && s.chars().anyMatch(Character::isLetter) && Detector.shannonEntropy(s) >= 3.5;
    }

    /**
     * A token used as the whole userinfo of a URL, as git credential helpers and CI clones write it:
     * {@code https://<token>@github.com/org/repo.git} (a user with a password is {@code url-password}'s).
     * Source: RFC 3986 section 3.2.1 (userinfo); Git documentation, "git-credential-store", storage format
     * (https://git-scm.com/docs/git-credential-store#_storage_format).
     */
    public static final Detector GIT_CREDENTIAL_URL = new Detector("git-credential-url",
            "token as the userinfo of a URL (https://<token>@host)", List.of("://"),
            Pattern.compile("(?<=[A-Za-z][A-Za-z0-9+.-]{0,20})://([A-Za-z0-9_.~-]{20,255}+)@(?=[A-Za-z0-9\\[])"),
            1, 0, checked(ContextDetectors::tokenUserinfo), 0, 270, false, ContextDetectors::tokenUserinfoFollows);

    /** 40 random base64 characters: three character classes, high entropy, not an identifier. */
    private static boolean awsSecretLike(String s) {
        return DetectorShapes.classes(s, 3) && Detector.shannonEntropy(s) >= 4.0 && !DetectorShapes.looksLikeCode(s);
    }

    /**
     * An AWS secret access key without a label, standing near its access key id: 40 characters of
     * base64 within 100 characters after the id, on its line or the next (CSV credential downloads,
     * {@code aws configure list} output, two shell arguments). Only the secret is redacted here; the id
     * is {@code aws-access-key-id}'s. Source: AWS IAM User Guide, "Manage access keys for IAM users"
     * (https://docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_access-keys.html), the access key
     * file's columns.
     */
    public static final Detector AWS_SECRET_NEAR_KEY_ID = keywordFirst("aws-secret-near-key-id",
            "AWS secret access key next to its access key id, without a label", List.of("akia", "asia", "abia", "acca"),
            "(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?![A-Za-z0-9])(?:[^\\n]{0,100}?|[^\\n]{0,100}\\n[^\\n]{0,100}?)"
                    + "(?<![A-Za-z0-9/+=])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
            270, 0, ContextDetectors::awsSecretLike, null);

    /** The detectors of this class, in registration order. */
    static List<Detector> all() {
        return List.of(AWS_SECRET_NEAR_KEY_ID, CURL_USER_PASSWORD, AUTHORIZATION_CREDENTIAL, BASIC_AUTH_CREDENTIAL,
                NETRC_PASSWORD, PGPASS_PASSWORD, XML_SECRET_ELEMENT, XML_SECRET_ATTRIBUTE, XML_SECRET_PROPERTY,
                DOCKER_CONFIG_AUTH, GIT_CREDENTIAL_URL);
    }
}
