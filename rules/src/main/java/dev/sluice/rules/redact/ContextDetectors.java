package dev.sluice.rules.redact;

import static dev.sluice.rules.redact.DetectorShapes.checked;

import java.util.List;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

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
        return keywordFirst(id, description, keywords, regex, maxLength, minEntropy, validator, precheck, true);
    }

    private static Detector keywordFirst(String id, String description, List<String> keywords, String regex,
                                         int maxLength, double minEntropy, Predicate<String> validator, Precheck precheck,
                                         boolean wordStart) {
        return new Detector(id, description, keywords, Pattern.compile(regex), 1, minEntropy, checked(validator), 0,
                maxLength, wordStart, precheck);
    }

    // ---------------------------------------------------------------- prechecks (see Precheck: sound, cheap)

    private static boolean isSpace(byte b) {
        return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == 0x0b || b == 0x0c;
    }

    /** Skips up to {@code max} whitespace bytes from {@code i}. */
    private static int spaces(byte[] text, int i, int limit, int max) {
        for (int k = 0; k < max && i < limit && isSpace(text[i]); k++) {
            i++;
        }
        return i;
    }

    /** Skips an optional backslash and an optional quote. */
    private static int quote(byte[] text, int i, int limit) {
        if (i < limit && text[i] == '\\') {
            i++;
        }
        if (i < limit && (text[i] == '"' || text[i] == '\'')) {
            i++;
        }
        return i;
    }

    /** Answers whether {@code n} bytes of {@code chars} (a 128-entry table) follow {@code i}, or the text ends first. */
    private static boolean run(byte[] text, int i, int limit, int n, boolean[] chars) {
        int end = i + n;
        for (; i < end; i++) {
            if (i >= limit) {
                return true;
            }
            int b = text[i];
            if (b < 0 || !chars[b]) {
                return false;
            }
        }
        return true;
    }

    private static boolean[] table(String ranges) {
        boolean[] t = new boolean[128];
        for (int i = 0; i < ranges.length(); i++) {
            char c = ranges.charAt(i);
            if (i + 2 < ranges.length() && ranges.charAt(i + 1) == '-') {
                for (char x = c; x <= ranges.charAt(i + 2); x++) {
                    t[x] = true;
                }
                i += 2;
            } else {
                t[c] = true;
            }
        }
        return t;
    }

    private static final boolean[] TOKEN_CHARS = table("A-Za-z0-9._~+/-");
    private static final boolean[] BASE64_CHARS = table("A-Za-z0-9+/");

    /**
     * At {@code " -u "} / {@code --user}: (after {@code --user}) whitespace or '=', an optional quote, then a ':' within 65 bytes
     * before any whitespace, quote or backslash.
     */
    private static boolean curlUserFollows(byte[] text, int start, int limit) {
        int i = start + (text[start] == '-' ? 6 : 3);
        if (i >= limit) {
            return true;
        }
        if (text[i] == '=' && text[start] == '-') {
            i++;
        } else if (isSpace(text[i]) || text[start] == ' ') {
            i = spaces(text, i, limit, 4);
        } else {
            return false;
        }
        i = quote(text, i, limit);
        int end = Math.min(limit, i + 66);
        for (; i < end; i++) {
            byte b = text[i];
            if (b == ':') {
                return true;
            }
            if (isSpace(b) || b == '"' || b == '\'' || b == '\\' || b == '$') {
                return false;
            }
        }
        return end >= limit;
    }

    /**
     * At {@code authorization}: an optional quote, spaces, ':' or '='. At {@code bearer}: whitespace,
     * then 16 token characters.
     */
    private static boolean credentialFollows(byte[] text, int start, int limit) {
        if ((text[start] | 0x20) == 'a') {
            int i = quote(text, start + 13, limit);
            i = spaces(text, i, limit, 4);
            return i >= limit || text[i] == ':' || text[i] == '=';
        }
        int i = start + 6;
        if (i >= limit) {
            return true;
        }
        if (!isSpace(text[i])) {
            return false;
        }
        return run(text, spaces(text, i, limit, 4), limit, 16, TOKEN_CHARS);
    }

    /** At {@code basic}: whitespace, then 8 base64 characters. */
    private static boolean base64Follows(byte[] text, int start, int limit) {
        int i = start + 5;
        if (i >= limit) {
            return true;
        }
        return isSpace(text[i]) && run(text, spaces(text, i, limit, 4), limit, 8, BASE64_CHARS);
    }

    /** At {@code machine}: whitespace, and {@code password} within the next 600 bytes. */
    private static boolean netrcPasswordFollows(byte[] text, int start, int limit) {
        int i = start + 7;
        if (i >= limit) {
            return true;
        }
        if (!isSpace(text[i])) {
            return false;
        }
        int end = Math.min(limit, start + 620);
        for (int j = i; j + 8 <= end; j++) {
            if (text[j] == 'p' && text[j + 1] == 'a' && text[j + 2] == 's' && text[j + 3] == 's' && text[j + 4] == 'w'
                    && text[j + 5] == 'o' && text[j + 6] == 'r' && text[j + 7] == 'd') {
                return true;
            }
        }
        return end >= limit - 7;
    }

    /**
     * The secret words the XML detectors start from (the generic assignment's keywords and their
     * variants, so the keyword scan gains no new fingerprints); their prechecks look only forward.
     */
    private static final List<String> SECRET_WORDS = List.of("password", "passwd", "secret", "token", "api_key", "api-key",
            "apikey", "access_key", "accesskey", "passphrase", "private_key", "privatekey");

    private static boolean isNameChar(byte b) {
        return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '_' || b == '.' || b == '-';
    }

    /** Skips up to {@code max} bytes of [A-Za-z0-9_.:-] (the rest of a key or element name). */
    private static int attributeChars(byte[] text, int i, int limit, int max) {
        int end = Math.min(limit, i + max);
        while (i < end && (isNameChar(text[i]) || text[i] == ':')) {
            i++;
        }
        return i;
    }

    /**
     * The one precheck of the three XML detectors (evaluated once per hit): after the secret word, the
     * rest of the name or key (up to 56 bytes of [A-Za-z0-9_.:-]),
     * then what one of them needs — '>' (the end of a start tag), a quote, whitespace and {@code value}
     * ({@link #valueAttributeFollows}) or {@code </} (a property name's end tag). It answers true wherever
     * one of the three does, so it is sound for each.
     */
    private static boolean xmlContextFollows(byte[] text, int start, int limit) {
        int i = attributeChars(text, start, limit, 56);
        if (i >= limit) {
            return true;
        }
        byte b = text[i];
        if (b == '>') {
            return true;
        }
        if (b == '<') {
            return i + 1 >= limit || text[i + 1] == '/';
        }
        return (b == '"' || b == '\'' || b == '\\') && valueAttributeFollows(text, start, limit);
    }

    private static final Precheck XML_PRECHECK = ContextDetectors::xmlContextFollows;


    /** At a secret word: the rest of a quoted key (up to 56 characters), its quote, whitespace, {@code value}. */
    private static boolean valueAttributeFollows(byte[] text, int start, int limit) {
        int i = attributeChars(text, start, limit, 56);
        i = quote(text, i, limit);
        if (i >= limit) {
            return true;
        }
        if (!isSpace(text[i])) {
            return false;
        }
        i = spaces(text, i, limit, 4);
        return i >= limit || (text[i] | 0x20) == 'v';
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
            "password of curl -u / --user user:password", List.of(" -u ", "--user"),
            "(?: -u\\s{0,3}+|--user(?:\\s{1,4}+|=))\\\\?[\"']?(?![0-9]{1,10}:)[^\\s:\"'\\\\$]{1,64}+:([^\\s\"'\\\\]{3,128}+)",
            210, 1.5, ContextDetectors::passwordLike, ContextDetectors::curlUserFollows, false);

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
            2060, 3.0, DetectorShapes::plausibleSecret, ContextDetectors::credentialFollows);

    /**
     * HTTP Basic credentials, {@code Basic <base64 of user:password>}, anywhere in text; the base64 run is
     * decoded and reported only when it is printable {@code user:password} text. Source: RFC 7617, "The
     * 'Basic' HTTP Authentication Scheme", section 2.
     */
    public static final Detector BASIC_AUTH_CREDENTIAL = keywordFirst("basic-auth-credential",
            "HTTP Basic credentials (Basic base64(user:password))", List.of("basic"),
            "(?i:basic)\\s{1,4}+([A-Za-z0-9+/]{8,1000}={0,2})(?![A-Za-z0-9+/=])",
            1020, 0, DetectorShapes::base64UserPassword, ContextDetectors::base64Follows);

    /**
     * {@code .netrc} entries: {@code machine <host> [login <user>] [account ...] password <password>}, on one
     * line or several. Source: GNU Inetutils manual, "The .netrc file"
     * (https://www.gnu.org/software/inetutils/manual/html_node/The-_002enetrc-file.html).
     */
    public static final Detector NETRC_PASSWORD = keywordFirst("netrc-password", "password of a .netrc machine entry",
            List.of("machine"),
            "machine\\s{1,8}+[^\\s]{1,253}+(?:\\s{1,8}+(?:login|account|port|protocol)\\s{1,8}+[^\\s]{1,128}+){0,3}"
                    + "\\s{1,8}+password\\s{1,8}+([^\\s]{3,256}+)",
            700, 0, ContextDetectors::passwordLike, ContextDetectors::netrcPasswordFollows);

    /**
     * PostgreSQL password file ({@code .pgpass}) lines, {@code host:port:database:user:password} (a whole
     * line, or a whole quoted string), found at
     * PostgreSQL's default port, {@code :5432:} (lines with another port or the {@code *} wildcard there
     * are not found). Source: PostgreSQL
     * documentation, "The Password File" (https://www.postgresql.org/docs/current/libpq-pgpass.html).
     */
    public static final Detector PGPASS_PASSWORD = new Detector("pgpass-password", "password of a .pgpass line",
            List.of(":5432:"),
            Pattern.compile("(?<![^\\n\"'])[^\\s:#\"']{1,100}:(?:[0-9]{1,5}|\\*):[^\\s:]{1,63}:[^\\s:]{1,63}:([^\\s\"']{3,128})"
                    + "(?=[\\r\\n\"']|\\z)"),
            1, 0, checked(ContextDetectors::passwordLike), 110, 370, false);

    /**
     * XML and HTML elements named like a secret: {@code <password>...</password>}, {@code <apiKey>},
     * {@code <clientSecret>}, {@code <token>}, {@code <passphrase>} and the like (CDATA sections too).
     * Source: XML 1.0 (Fifth Edition), sections 3.1 (start and end tags) and 2.7 (CDATA sections); the
     * names are those of common configuration files (Maven {@code settings.xml}, .NET, Spring).
     */
    public static final Detector XML_SECRET_ELEMENT = new Detector("xml-secret-element",
            "XML element named like a secret (<password>, <apiKey>, ...)", SECRET_WORDS,
            Pattern.compile("<([A-Za-z0-9_.-]{0,20}?(?i:password|passwd|secret|api[_-]?key|token|access[_-]?key"
                    + "|passphrase|private[_-]?key)[A-Za-z0-9_.-]{0,20}+)>\\s{0,8}+(?:<!\\[CDATA\\[)?"
                    + "([^<>\\s\\]]{6,512}+)(?:\\]\\]>)?\\s{0,8}+</\\1>"),
            2, 0, checked(DetectorShapes::plausibleSecret), 21, 620, false, XML_PRECHECK);

    /**
     * XML key/value settings whose key names a secret: {@code <add key="ApiKey" value="..."/>} (.NET
     * {@code appSettings}), {@code <entry key="db.password" value="..."/>}, {@code <setting name=...
     * value=...>}, {@code <param>}, {@code <property>}. Source: Microsoft Learn, "appSettings element" and
     * XML 1.0 section 3.1 (attributes).
     */
    public static final Detector XML_SECRET_ATTRIBUTE = new Detector("xml-secret-attribute",
            "value= of an XML setting whose key names a secret", SECRET_WORDS,
            Pattern.compile("<(?:add|entry|setting|param|parameter|property)\\s{1,4}+(?:key|name)\\s{0,2}=\\s{0,2}[\"']"
                    + "[A-Za-z0-9_.:-]{0,40}(?i:password|passwd|secret|token|api[_-]?key|access[_-]?key|passphrase|private[_-]?key)"
                    + "[A-Za-z0-9_.:-]{0,40}[\"']\\s{1,4}+value\\s{0,2}=\\s{0,2}[\"']([^\"'<>]{6,512})[\"']"),
            1, 0, checked(DetectorShapes::plausibleSecret), 70, 680, false, XML_PRECHECK);

    /**
     * Hadoop-style XML properties, {@code <name>...secret.key</name> <value>...</value>} (core-site.xml's
     * {@code fs.s3a.secret.key}, {@code ...password}, {@code ...token}). Source: Apache Hadoop,
     * "Configuration" (https://hadoop.apache.org/docs/stable/api/org/apache/hadoop/conf/Configuration.html).
     */
    public static final Detector XML_SECRET_PROPERTY = new Detector("xml-secret-property",
            "<value> of an XML property whose <name> names a secret", SECRET_WORDS,
            Pattern.compile("<name>\\s{0,4}+[^<>\\s]{0,60}(?i:password|passwd|secret|token|api[_-]?key|access[_-]?key|passphrase"
                    + "|private[_-]?key)[A-Za-z0-9_.:-]{0,40}</name>\\s{0,40}+<value>\\s{0,4}+([^<>\\s]{6,512}+)\\s{0,4}+</value>"),
            1, 0, checked(DetectorShapes::plausibleSecret), 70, 720, false, XML_PRECHECK);

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

    /** Decodes standard base64 (padding optional) to ISO-8859-1 text, or null. */
    private static @Nullable String base64Text(String s) {
        try {
            return new String(java.util.Base64.getDecoder().decode(s), java.nio.charset.StandardCharsets.ISO_8859_1);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static boolean base64OfPrivateKey(String s) {
        String t = base64Text(s);
        return t != null && t.contains("PRIVATE KEY") && t.contains("-----END ");
    }

    private static boolean base64OfDockerAuths(String s) {
        String t = base64Text(s.length() % 4 == 0 ? s : s.substring(0, s.length() - s.length() % 4));
        return t != null && (t.contains("\"auth\"") || t.contains("\"password\"") || t.contains("\"identitytoken\""));
    }

    /**
     * A PEM private key written in base64 as a whole (Kubernetes {@code tls.key} and Secret {@code data}
     * values, CI variables): the run starts {@code LS0tLS1CRUdJTi} (base64 of {@code -----BEGIN}) and is
     * reported when it decodes to a private key block; the whole encoded run is replaced. Source: RFC
     * 4648 section 4 (base64); Kubernetes documentation, "Secrets", {@code data} values are base64
     * (https://kubernetes.io/docs/concepts/configuration/secret/).
     */
    public static final Detector BASE64_PRIVATE_KEY = keywordFirst("base64-private-key",
            "base64 of a PEM private key (LS0tLS1CRUdJTi...)", List.of("ls0tls1crudjti"),
            "(LS0tLS1CRUdJTi[A-Za-z0-9+/]{40,12000}={0,2})(?![A-Za-z0-9+/=])", 12020, 0, ContextDetectors::base64OfPrivateKey, null);

    /**
     * A Docker client configuration written in base64 as a whole ({@code .dockerconfigjson} of a
     * Kubernetes Secret): the run starts {@code eyJhdXRocyI6} (base64 of <code>{"auths":</code>) and is
     * reported when it decodes to JSON with an {@code auth}, {@code password} or {@code identitytoken}
     * member; the whole encoded run is replaced. Source: Kubernetes documentation, "Pull an Image from a
     * Private Registry" (https://kubernetes.io/docs/tasks/configure-pod-container/pull-image-private-registry/).
     */
    public static final Detector BASE64_DOCKER_CONFIG = keywordFirst("base64-docker-config",
            "base64 of a Docker config.json with credentials (.dockerconfigjson)", List.of("eyjhdxrocyi6"),
            "(eyJhdXRocyI6[A-Za-z0-9+/]{20,8000}={0,2})(?![A-Za-z0-9+/=])", 8020, 0, ContextDetectors::base64OfDockerAuths, null);

    /** The detectors of this class, in registration order. */
    static List<Detector> all() {
        return List.of(AWS_SECRET_NEAR_KEY_ID, CURL_USER_PASSWORD, AUTHORIZATION_CREDENTIAL, BASIC_AUTH_CREDENTIAL,
                NETRC_PASSWORD, PGPASS_PASSWORD, XML_SECRET_ELEMENT, XML_SECRET_ATTRIBUTE, XML_SECRET_PROPERTY,
                DOCKER_CONFIG_AUTH, GIT_CREDENTIAL_URL, BASE64_PRIVATE_KEY, BASE64_DOCKER_CONFIG);
    }
}
