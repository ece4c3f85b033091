package dev.sluice.rules.redact;

import static dev.sluice.rules.redact.DetectorShapes.NA;
import static dev.sluice.rules.redact.DetectorShapes.NA_URL;
import static dev.sluice.rules.redact.DetectorShapes.NB;
import static dev.sluice.rules.redact.DetectorShapes.assignment;
import static dev.sluice.rules.redact.DetectorShapes.checked;
import static dev.sluice.rules.redact.DetectorShapes.labelled;
import static dev.sluice.rules.redact.DetectorShapes.prefixed;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * The built-in detectors, one constant per credential format. Each constant's Javadoc says, in our own
 * words, what the format looks like and names the public source it follows. Patterns are ours; they
 * use bounded quantifiers only. Order matters in one place: when matches of two detectors overlap, the
 * one earlier in {@link #all()} names the redaction, so specific formats come first and
 * {@link #GENERIC_SECRET} last.
 */
public final class BuiltinDetectors {

    private BuiltinDetectors() {
    }

    /** At {@code ://}: user chars, then ':' within 64 characters, as the pattern needs. */
    private static boolean urlUserinfoFollows(byte[] text, int start, int limit) {
        int i = start + 3;
        int end = Math.min(limit, i + 65);
        for (; i < end; i++) {
            byte b = text[i];
            if (b == ':') {
                return true;
            }
            if (b <= ' ' || b == '@' || b == '/' || b == '?' || b == '#' || b == '"' || b == '\'' || b == '<' || b == '>'
                    || b == '\\') {
                return false;
            }
        }
        return i >= limit;
    }

    // ---------------------------------------------------------------- cloud providers

    /**
     * AWS access key id: a four-character prefix naming the kind of key (AKIA long-term, ASIA temporary,
     * ABIA, ACCA; older A3T plus one character) then 16 characters of the base32 alphabet A–Z, 2–7.
     * The documentation's example key, ending in EXAMPLE, is not reported.
     * Source: AWS IAM User Guide, "IAM identifiers", unique ID prefixes
     * (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-unique-ids).
     */
    public static final Detector AWS_ACCESS_KEY_ID = prefixed("aws-access-key-id", "AWS access key id (AKIA..., ASIA...)",
            List.of("akia", "asia", "abia", "acca", "a3t"),
            NB + "(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}" + NA, 20, 0, s -> !s.endsWith("EXAMPLE"));

    /**
     * AWS secret access key: 40 characters of base64 (A–Z, a–z, 0–9, / and +) with no structure of its
     * own, so only reported right after a label such as {@code aws_secret_access_key =} or
     * {@code "SecretAccessKey": }. Source: AWS General Reference, "AWS security credentials", access keys
     * (https://docs.aws.amazon.com/IAM/latest/UserGuide/security-creds.html); the label names are those of
     * the AWS CLI configuration file and the STS/IAM JSON responses.
     */
    public static final Detector AWS_SECRET_ACCESS_KEY = assignment("aws-secret-access-key",
            "AWS secret access key next to its label",
            List.of("secret_access_key", "secretaccesskey", "secret-access-key", "aws_secret"),
            "(?i:(?:aws_?)?secret_?access_?key|secret-access-key|aws_secret(?:_key)?)"
                    + "\\\\?[\"']?\\s{0,4}+(?::=|=>|[:=])\\s{0,4}+\\\\?[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
            96, 3.0, null, 24, 40, false);

    /**
     * Amazon Bedrock API key: long-term keys start with ABSK followed by base64; short-term keys start
     * with {@code bedrock-api-key-} followed by a base64 encoded presigned token. Source: Amazon Bedrock
     * User Guide, "Use an Amazon Bedrock API key"
     * (https://docs.aws.amazon.com/bedrock/latest/userguide/api-keys.html).
     */
    public static final Detector AWS_BEDROCK_API_KEY = prefixed("aws-bedrock-api-key", "Amazon Bedrock API key",
            List.of("absk", "bedrock-api-key-"),
            NB + "(?:ABSK[A-Za-z0-9+/]{60,300}={0,2}|bedrock-api-key-[A-Za-z0-9+/]{60,2000}={0,2})(?![A-Za-z0-9+/=])",
            2100, 3.5, null);

    /**
     * Google API key: {@code AIza} followed by 35 characters of [A-Za-z0-9_-] (39 in all). Source: Google
     * Cloud documentation, "Manage API keys" (https://cloud.google.com/docs/authentication/api-keys), and the
     * key shape shown in its examples.
     */
    public static final Detector GOOGLE_API_KEY = prefixed("google-api-key", "Google API key (AIza...)",
            List.of("aiza"), NB + "AIza[0-9A-Za-z_-]{35}" + NA_URL, 39, 0, null);

    /**
     * Google Cloud service-account key file: a JSON document whose {@code private_key} member holds a
     * PKCS#8 PEM block ({@code -----BEGIN PRIVATE KEY-----}), with newlines written as {@code \n}. The
     * PEM is what is redacted. Source: Google Cloud IAM documentation, "Create and delete service account
     * keys" (https://cloud.google.com/iam/docs/keys-create-delete), key file format.
     */
    public static final Detector GCP_SERVICE_ACCOUNT_KEY = labelled("gcp-service-account-key",
            "GCP service-account key file (private_key member)",
            List.of("private_key"),
            "private_key\\\\?[\"']?\\s{0,4}:\\s{0,4}\\\\?[\"']"
                    + "(-----BEGIN PRIVATE KEY-----[A-Za-z0-9+/=\\s\\\\]{64,8192}-----END PRIVATE KEY-----)",
            8300, 0, null);

    /**
     * Azure Storage account key after its {@code AccountKey=} label: 64 random bytes in base64, 86 to 88
     * characters with padding. Source: Microsoft Learn, "Configure Azure Storage connection strings"
     * (https://learn.microsoft.com/azure/storage/common/storage-configure-connection-string).
     */
    public static final Detector AZURE_STORAGE_ACCOUNT_KEY = labelled("azure-storage-account-key",
            "Azure Storage account key (AccountKey=...)", List.of("accountkey"),
            "(?i:accountkey)\\s{0,2}=\\s{0,2}([A-Za-z0-9+/]{86,88}={0,2})(?![A-Za-z0-9+/=])", 105, 4.0, null);

    /**
     * Azure Storage connection string with an account key:
     * {@code DefaultEndpointsProtocol=https;AccountName=...;AccountKey=...}. The whole string through the
     * key is redacted. Source: Microsoft Learn, "Configure Azure Storage connection strings"
     * (https://learn.microsoft.com/azure/storage/common/storage-configure-connection-string).
     */
    public static final Detector AZURE_STORAGE_CONNECTION_STRING = prefixed("azure-storage-connection-string",
            "Azure Storage connection string with AccountKey", List.of("defaultendpointsprotocol"),
            "(?i:DefaultEndpointsProtocol)=https?;(?i:AccountName)=[A-Za-z0-9]{3,24};(?i:AccountKey)="
                    + "[A-Za-z0-9+/]{86,88}={0,2}(?![A-Za-z0-9+/=])",
            220, 0, null);

    /**
     * Azure shared access signature: the {@code sig=} query parameter of a SAS URL or token, an
     * HMAC-SHA256 in base64 (often percent-encoded), after {@code ?} or {@code &}. Source: Microsoft Learn,
     * "Create a service SAS" (https://learn.microsoft.com/rest/api/storageservices/create-service-sas).
     */
    public static final Detector AZURE_SAS_TOKEN = new Detector("azure-sas-token",
            "Azure shared access signature (sig= parameter)", List.of("sig="),
            Pattern.compile("(?<=[?&])sig=((?:[A-Za-z0-9+/]|%2[bBfF]){40,120}(?:=|%3[dD]){0,2})(?![A-Za-z0-9%+/=])"),
            1, 3.5, checked(null), 0, 140, false);

    /**
     * Azure Service Bus / Event Hubs / Relay shared access key after {@code SharedAccessKey=}: 32 random
     * bytes in base64 (44 characters ending in {@code =}). Source: Microsoft Learn, "Service Bus access
     * control with Shared Access Signatures"
     * (https://learn.microsoft.com/azure/service-bus-messaging/service-bus-sas).
     */
    public static final Detector AZURE_SHARED_ACCESS_KEY = labelled("azure-shared-access-key",
            "Azure Service Bus/Event Hubs shared access key", List.of("sharedaccesskey="),
            "(?i:sharedaccesskey)=([A-Za-z0-9+/]{43}=)(?![A-Za-z0-9+/=])", 64, 3.5, null);

    /**
     * Microsoft Entra ID (Azure AD) application client secret: three characters, a digit, {@code Q~},
     * then 31 to 34 characters of [A-Za-z0-9_~.-]. Source: Microsoft's published client-secret shape
     * (Microsoft Learn, "Add and manage application credentials",
     * https://learn.microsoft.com/entra/identity-platform/how-to-add-credentials) as documented by secret
     * scanners (gitleaks rule {@code azure-ad-client-secret}).
     */
    public static final Detector AZURE_AD_CLIENT_SECRET = new Detector("azure-ad-client-secret",
            "Microsoft Entra ID (Azure AD) client secret", List.of("q~"),
            Pattern.compile("(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"),
            0, 3.0, checked(null), 4, 40, false);

    // ---------------------------------------------------------------- source hosting and CI

    /**
     * GitHub classic personal access token: {@code ghp_} then 36 base62 characters, of which the last
     * six are a CRC32 checksum of the rest in base62. Source: GitHub blog, "Behind GitHub's new
     * authentication token formats", 2021-04-05
     * (https://github.blog/2021-04-05-behind-githubs-new-authentication-token-formats/).
     * The checksum is not required for a match (see {@link GithubChecksum}).
     */
    public static final Detector GITHUB_PAT = prefixed("github-pat", "GitHub classic personal access token (ghp_)",
            List.of("ghp_"), NB + "ghp_[A-Za-z0-9]{36}" + NA, 40, 3.0, null);

    /**
     * GitHub fine-grained personal access token: {@code github_pat_} then 82 characters of
     * [A-Za-z0-9_] (22, an underscore, 59). Source: GitHub Docs, "Managing your personal access tokens"
     * (https://docs.github.com/authentication/keeping-your-account-and-data-secure/managing-your-personal-access-tokens).
     */
    public static final Detector GITHUB_FINE_GRAINED_PAT = prefixed("github-fine-grained-pat",
            "GitHub fine-grained personal access token (github_pat_)", List.of("github_pat_"),
            NB + "github_pat_[A-Za-z0-9_]{82}(?![A-Za-z0-9_])", 93, 3.0, null);

    /**
     * GitHub OAuth access token: {@code gho_} then 36 base62 characters (checksummed as {@link #GITHUB_PAT}).
     * Source: GitHub blog, "Behind GitHub's new authentication token formats", 2021-04-05.
     */
    public static final Detector GITHUB_OAUTH_TOKEN = prefixed("github-oauth-token", "GitHub OAuth access token (gho_)",
            List.of("gho_"), NB + "gho_[A-Za-z0-9]{36}" + NA, 40, 3.0, null);

    /**
     * GitHub App tokens: user-to-server {@code ghu_} and server-to-server (installation) {@code ghs_},
     * then 36 base62 characters. Source: GitHub blog, "Behind GitHub's new authentication token formats",
     * 2021-04-05.
     */
    public static final Detector GITHUB_APP_TOKEN = prefixed("github-app-token",
            "GitHub App user-to-server or installation token (ghu_, ghs_)", List.of("ghu_", "ghs_"),
            NB + "gh[us]_[A-Za-z0-9]{36}" + NA, 40, 3.0, null);

    /**
     * GitHub App refresh token: {@code ghr_} then 36 or more base62 characters (76 in tokens seen so far).
     * Source: GitHub blog, "Behind GitHub's new authentication token formats", 2021-04-05; GitHub Docs,
     * "Refreshing user access tokens".
     */
    public static final Detector GITHUB_REFRESH_TOKEN = prefixed("github-refresh-token", "GitHub App refresh token (ghr_)",
            List.of("ghr_"), NB + "ghr_[A-Za-z0-9]{36,76}" + NA, 80, 3.0, null);

    /**
     * GitLab personal, project and group access token: {@code glpat-} then 20 characters of
     * [A-Za-z0-9_-], or the longer routable form (a base64url payload, a dot, a short suffix). Source:
     * GitLab Docs, "GitLab token overview", token prefixes (https://docs.gitlab.com/security/tokens/).
     */
    public static final Detector GITLAB_PAT = prefixed("gitlab-pat", "GitLab personal/project/group access token (glpat-)",
            List.of("glpat-"), NB + "glpat-[A-Za-z0-9_-]{20,300}(?:\\.[A-Za-z0-9_-]{2,64})?" + NA_URL, 380, 3.0, null);

    /**
     * Other GitLab tokens, by prefix: deploy ({@code gldt-}), runner authentication ({@code glrt-}), CI/CD
     * job ({@code glcbt-}), pipeline trigger ({@code glptt-}), feed ({@code glft-}), OAuth application
     * secret ({@code gloas-}), SCIM ({@code glsoat-}), incoming mail ({@code glimt-}), agent
     * ({@code glagent-}), feature flags client ({@code glffct-}). Source: GitLab Docs, "GitLab token
     * overview", token prefixes (https://docs.gitlab.com/security/tokens/).
     */
    public static final Detector GITLAB_TOKEN = prefixed("gitlab-token", "GitLab deploy, runner, CI and other tokens",
            List.of("gldt-", "glrt-", "glcbt-", "glptt-", "glft-", "gloas-", "glsoat-", "glimt-", "glagent-", "glffct-"),
            NB + "(?:gldt|glrt|glcbt|glptt|glft|gloas|glsoat|glimt|glagent|glffct)-[A-Za-z0-9_-]{20,300}"
                    + "(?:\\.[A-Za-z0-9_-]{2,64})?" + NA_URL,
            380, 3.0, null);

    /**
     * npm access token: {@code npm_} then 36 base62 characters (30 random, 6 of CRC32 checksum). Source:
     * GitHub blog, "Announcing npm's new access token format", 2021-09-23
     * (https://github.blog/2021-09-23-announcing-npms-new-access-token-format/).
     */
    public static final Detector NPM_TOKEN = prefixed("npm-token", "npm access token (npm_)", List.of("npm_"),
            NB + "npm_[A-Za-z0-9]{36}" + NA, 40, 3.0, null);

    /**
     * PyPI API token: {@code pypi-} then a base64url macaroon whose first bytes encode the index it was
     * issued by: the production index ({@code AgEIcHlwaS5vcmc}) or its test instance
     * ({@code AgENdGVzdC5weXBpLm9yZw}). Source: PyPI's help pages, "How can I use API tokens to
     * authenticate with PyPI?".
     */
    public static final Detector PYPI_TOKEN = prefixed("pypi-token", "PyPI API token (pypi-AgE...)", List.of("pypi-age"),
            NB + "pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,1000}" + NA_URL, 1030, 0, null);

    // ---------------------------------------------------------------- chat, payments, SaaS

    /**
     * Slack tokens: bot {@code xoxb-}, user {@code xoxp-}, app-level configuration and refresh tokens
     * {@code xoxe-}/{@code xoxe.xoxp-}, legacy {@code xoxa-}, {@code xoxr-}, {@code xoxo-}, {@code xoxs-};
     * then digits, letters and dashes. Source: Slack API documentation, "Token types"
     * (https://api.slack.com/authentication/token-types).
     */
    public static final Detector SLACK_TOKEN = prefixed("slack-token", "Slack bot/user/refresh token (xoxb-, xoxp-, ...)",
            List.of("xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxo-", "xoxs-", "xoxe-", "xoxe."),
            NB + "(?:xox[bparose]|xoxe\\.xox[bp])-[0-9A-Za-z-]{10,250}(?![0-9A-Za-z-])", 265, 3.0, null);

    /**
     * Slack app-level token: {@code xapp-}, a digit, an upper-case app id, a number and a long hex
     * string, separated by dashes. Source: Slack API documentation, "Token types", app-level tokens
     * (https://api.slack.com/authentication/token-types#app-level).
     */
    public static final Detector SLACK_APP_TOKEN = prefixed("slack-app-token", "Slack app-level token (xapp-)",
            List.of("xapp-"), NB + "xapp-[0-9]-[A-Z0-9]{8,14}-[0-9]{6,20}-[A-Za-z0-9]{32,80}" + NA, 130, 3.0, null);

    /**
     * Slack incoming webhook and workflow trigger URL: {@code hooks.slack.com/services/...},
     * {@code /workflows/...} or {@code /triggers/...}; the path is the secret. Source: Slack API
     * documentation, "Sending messages using incoming webhooks" (https://api.slack.com/messaging/webhooks).
     */
    public static final Detector SLACK_WEBHOOK_URL = prefixed("slack-webhook-url", "Slack incoming webhook URL",
            List.of("hooks.slack.com"),
            "hooks\\.slack\\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,200}", 240, 0, null);

    /**
     * Stripe secret and restricted API keys: {@code sk_} or {@code rk_}, then {@code live_},
     * {@code test_} or {@code prod_}, then 10 to 99 alphanumerics. (Publishable {@code pk_} keys are public
     * and not reported.) Source: Stripe documentation, "API keys" (https://docs.stripe.com/keys).
     */
    public static final Detector STRIPE_SECRET_KEY = prefixed("stripe-secret-key", "Stripe secret or restricted key",
            List.of("sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"),
            NB + "[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,99}" + NA, 110, 3.0, null);

    /**
     * Stripe webhook endpoint signing secret: {@code whsec_} then base64. Source: Stripe documentation,
     * "Check the webhook signatures" (https://docs.stripe.com/webhooks#verify-events).
     */
    public static final Detector STRIPE_WEBHOOK_SECRET = prefixed("stripe-webhook-secret", "Stripe webhook signing secret",
            List.of("whsec_"), NB + "whsec_[A-Za-z0-9+/=]{24,100}(?![A-Za-z0-9+/=])", 106, 3.0, null);

    /**
     * Twilio API key SID used as a credential: {@code SK} then 32 hex digits. (Account SIDs, {@code AC...},
     * are identifiers, not secrets, and are not reported.) Source: Twilio documentation, "API keys"
     * (https://www.twilio.com/docs/iam/api-keys).
     */
    public static final Detector TWILIO_API_KEY = prefixed("twilio-api-key", "Twilio API key (SK + 32 hex)",
            List.of("sk"), NB + "SK[0-9a-fA-F]{32}" + NA, 34, 3.0, null);

    /**
     * SendGrid API key: {@code SG.}, 22 base64url characters, a dot, 43 base64url characters. Source:
     * Twilio SendGrid documentation, "API keys" (https://www.twilio.com/docs/sendgrid/ui/account-and-settings/api-keys).
     */
    public static final Detector SENDGRID_API_KEY = prefixed("sendgrid-api-key", "SendGrid API key (SG.xxx.yyy)",
            List.of("sg."), NB + "SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}" + NA_URL, 69, 3.0, null);

    /**
     * Databricks personal access token: {@code dapi} then 32 hex digits, sometimes with a {@code -N}
     * suffix. Source: Databricks documentation, "Databricks personal access token authentication"
     * (https://docs.databricks.com/dev-tools/auth/pat.html).
     */
    public static final Detector DATABRICKS_TOKEN = prefixed("databricks-token", "Databricks personal access token (dapi)",
            List.of("dapi"), NB + "dapi[0-9a-f]{32}(?:-[0-9])?" + NA, 38, 3.0, null);

    /**
     * Shopify app tokens: admin API access {@code shpat_}, shared secret {@code shpss_}, custom app
     * {@code shpca_}, private app {@code shppa_}; then 32 hex digits. Source: Shopify developer changelog,
     * "New prefixes for access tokens and API keys" (https://shopify.dev/changelog).
     */
    public static final Detector SHOPIFY_TOKEN = prefixed("shopify-token", "Shopify access token or shared secret",
            List.of("shpat_", "shpss_", "shpca_", "shppa_"), NB + "shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + NA, 38, 3.0, null);

    /**
     * DigitalOcean tokens: personal access {@code dop_v1_}, OAuth {@code doo_v1_}, refresh
     * {@code dor_v1_}; then 64 hex digits. Source: DigitalOcean documentation, "How to Create a Personal
     * Access Token" (https://docs.digitalocean.com/reference/api/create-personal-access-token/).
     */
    public static final Detector DIGITALOCEAN_TOKEN = prefixed("digitalocean-token", "DigitalOcean token (dop_v1_ ...)",
            List.of("dop_v1_", "doo_v1_", "dor_v1_"), NB + "do[por]_v1_[a-f0-9]{64}" + NA, 71, 3.0, null);

    /**
     * HashiCorp Vault service and batch tokens: {@code hvs.} or {@code hvb.} then base64url. Source:
     * HashiCorp Vault documentation, "Tokens", token prefixes
     * (https://developer.hashicorp.com/vault/docs/concepts/tokens#token-prefixes).
     */
    public static final Detector VAULT_TOKEN = prefixed("vault-token", "HashiCorp Vault token (hvs., hvb.)",
            List.of("hvs.", "hvb."), NB + "hv[sb]\\.[A-Za-z0-9_-]{24,200}" + NA_URL, 204, 3.5, null);

    /**
     * Postman API key: {@code PMAK-}, 24 hex digits, a dash, 34 hex digits. Source: Postman Learning
     * Center, "Generate and use Postman API keys" (https://learning.postman.com/docs/developer/postman-api/authentication/).
     */
    public static final Detector POSTMAN_API_KEY = prefixed("postman-api-key", "Postman API key (PMAK-)",
            List.of("pmak-"), NB + "PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + NA, 64, 3.0, null);

    /**
     * Linear personal API key: {@code lin_api_} then 40 alphanumerics. Source: Linear developers
     * documentation, "Authentication" (https://linear.app/developers/graphql#authentication).
     */
    public static final Detector LINEAR_API_KEY = prefixed("linear-api-key", "Linear API key (lin_api_)",
            List.of("lin_api_"), NB + "lin_api_[A-Za-z0-9]{40}" + NA, 48, 3.0, null);

    // ---------------------------------------------------------------- LLM providers

    /**
     * OpenAI API keys: {@code sk-}, optionally {@code proj-}, {@code svcacct-} or {@code admin-}, then
     * base64url characters with the marker {@code T3BlbkFJ} (base64 of "OpenAI") in the middle. The
     * keyword is the marker, so the match may start up to 270 characters before it. Source: OpenAI API
     * reference, "Authentication" (https://platform.openai.com/docs/api-reference/authentication); the
     * marker is documented by secret scanners (gitleaks rule {@code openai-api-key}).
     */
    public static final Detector OPENAI_API_KEY = new Detector("openai-api-key", "OpenAI API key (sk-...T3BlbkFJ...)",
            List.of("t3blbkfj"),
            Pattern.compile("sk-(?<![A-Za-z0-9_-]sk-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,250}T3BlbkFJ[A-Za-z0-9_-]{16,250}"
                    + NA_URL),
            0, 3.0, checked(null), 270, 530, false);

    /**
     * Anthropic API keys: {@code sk-ant-}, a kind and version ({@code api03}, {@code admin01}, OAuth
     * {@code oat01}/{@code ort01}), a dash, about 93 base64url characters, ending in {@code AA}. Source:
     * Anthropic documentation, "API keys" (https://docs.anthropic.com/en/api/overview#authentication);
     * the shape is documented by secret scanners (gitleaks rule {@code anthropic-api-key}).
     */
    public static final Detector ANTHROPIC_API_KEY = prefixed("anthropic-api-key", "Anthropic API key (sk-ant-...)",
            List.of("sk-ant-"), NB + "sk-ant-(?:api|admin|oat|ort)[0-9]{2}-[A-Za-z0-9_-]{80,110}AA" + NA_URL, 130, 3.0, null);

    /**
     * OpenRouter API key: {@code sk-or-v1-} then 64 hex digits. Source: OpenRouter documentation,
     * "Authentication" (https://openrouter.ai/docs/api-reference/authentication).
     */
    public static final Detector OPENROUTER_API_KEY = prefixed("openrouter-api-key", "OpenRouter API key (sk-or-v1-)",
            List.of("sk-or-v1-"), NB + "sk-or-v1-[0-9a-f]{64}" + NA, 73, 3.0, null);

    /**
     * Groq API key: {@code gsk_} then 52 alphanumerics. Source: GroqCloud documentation, "Quickstart"
     * (https://console.groq.com/docs/quickstart).
     */
    public static final Detector GROQ_API_KEY = prefixed("groq-api-key", "Groq API key (gsk_)", List.of("gsk_"),
            NB + "gsk_[A-Za-z0-9]{52}" + NA, 56, 3.0, null);

    /**
     * xAI API key: {@code xai-} then 80 alphanumerics. Source: xAI documentation, "The Hitchhiker's Guide
     * to Grok" / API keys (https://docs.x.ai/docs/tutorial).
     */
    public static final Detector XAI_API_KEY = prefixed("xai-api-key", "xAI API key (xai-)", List.of("xai-"),
            NB + "xai-[A-Za-z0-9]{80}" + NA, 84, 3.0, null);

    /**
     * Hugging Face user access token {@code hf_} and organization token {@code api_org_}, then 34
     * alphanumerics. Source: Hugging Face Hub documentation, "User access tokens"
     * (https://huggingface.co/docs/hub/security-tokens).
     */
    public static final Detector HUGGINGFACE_TOKEN = prefixed("huggingface-token", "Hugging Face access token (hf_)",
            List.of("hf_", "api_org_"), NB + "(?:hf_|api_org_)[A-Za-z0-9]{34}" + NA, 42, 3.0, null);

    // ---------------------------------------------------------------- generic structures

    /**
     * PEM or OpenPGP armored private key: from {@code -----BEGIN ... PRIVATE KEY-----} (RSA, EC, DSA,
     * OPENSSH, ENCRYPTED, plain PKCS#8) or {@code -----BEGIN PGP PRIVATE KEY BLOCK-----} through the
     * matching END line, with up to six single hyphens in header lines before the body (Proc-Type, DEK-Info:
 * AES-128-CBC). Newlines may be
     * real or escaped ({@code \n}). Longest match 13,200 characters (an 8192-bit RSA key is about 6,400).
     * Sources: RFC 7468, "Textual Encodings of PKIX, PKCS, and CMS Structures"; RFC 4880 section 6.2,
     * OpenPGP ASCII armor; RFC 1421 section 4.6 (Proc-Type and DEK-Info headers).
     */
    public static final Detector PRIVATE_KEY_PEM = prefixed("private-key-pem", "PEM or PGP armored private key",
            List.of("-----begin "),
            "-----BEGIN (?:[A-Z0-9]{1,20} ){0,2}PRIVATE KEY(?: BLOCK)?-----(?:[^-]{0,300}-[A-Za-z0-9]){0,6}[^-]{16,10000}"
                    + "-----END (?:[A-Z0-9]{1,20} ){0,2}PRIVATE KEY(?: BLOCK)?-----",
            13200, 0, null);

    /**
     * JSON Web Token in compact serialization: three base64url segments separated by dots, the first two
     * starting with {@code eyJ} (base64 of <code>{"</code>). Source: RFC 7519, "JSON Web Token", section 3
     * and RFC 7515 section 7.1 (compact serialization).
     */
    public static final Detector JWT = prefixed("jwt", "JSON Web Token (eyJ...eyJ...sig)", List.of("eyj"),
            NB + "eyJ[A-Za-z0-9_-]{8,2000}\\.eyJ[A-Za-z0-9_-]{8,6000}\\.[A-Za-z0-9_-]{16,1000}" + NA_URL, 9010, 0, null);

    /**
     * age secret key: {@code AGE-SECRET-KEY-1} then 58 upper-case Bech32 characters. Source: the age
     * format specification, "X25519 recipient type" (https://age-encryption.org/v1).
     */
    public static final Detector AGE_SECRET_KEY = prefixed("age-secret-key", "age encryption secret key",
            List.of("age-secret-key-1"), "AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}" + NA, 74, 0, null);

    /**
     * Password in a URL's userinfo: {@code scheme://user:password@host}. Only the password is redacted;
     * obvious placeholders ({@code password}, {@code ****}, {@code ${VAR}}, {@code <pass>}) are not
     * reported. The match starts at {@code ://} (the scheme is checked by a look-behind), so the pattern
     * runs anchored at each keyword. Source: RFC 3986 section 3.2.1 (userinfo; "user:password" is
     * deprecated there).
     */
    public static final Detector URL_PASSWORD = new Detector("url-password", "password in a URL (scheme://user:pass@host)",
            List.of("://"),
            Pattern.compile("(?<=[A-Za-z][A-Za-z0-9+.-]{0,20})://[^\\s:@/?#\"'<>\\\\]{1,64}+:"
                    + "([^\\s:@/?#\"'<>\\\\]{3,128}+)@(?=[A-Za-z0-9\\[])"),
            1, 0, checked(DetectorShapes::notPlaceholder), 0, 200, false, BuiltinDetectors::urlUserinfoFollows);

    /**
     * Generic secret assignment: a label (password, passwd, pwd, {@code _pass}, passphrase,
     * secret, api_key, apikey, access_key, token — with up to 30 more name characters, e.g.
     * {@code DB_PASSWORD_PROD}, but not a name ending in hash, sha256, md5, digest, checksum, fingerprint,
     * count, length, type, url, path, file, name or id), an assignment ({@code =}, {@code :}, {@code :=},
     * {@code =>}), optional quotes, and a value of 8 to 128 characters (not ending in a full stop). This
     * covers YAML, JSON, TOML, INI, Java properties, {@code .env}, shell {@code export}, XML attributes and
     * Python, JavaScript, Go and Java assignments. Only values with Shannon entropy of at least 3.0 bits per
     * character and two character classes that are not a placeholder ({@code changeme}, {@code ${VAR}},
     * {@code <your-key>}, {@code xxxx}), a code identifier or expression ({@code process.env.TOKEN},
     * {@code os.environ[...]}, {@code e.apiKey||t}), a UUID, a hash or a data URL are reported. The value
     * is what is redacted. Source: our own rule; the entropy gate follows the practice described in
     * gitleaks' documentation (https://github.com/gitleaks/gitleaks#configuration, {@code entropy}).
     */
    public static final Detector GENERIC_SECRET = assignment("generic-secret",
            "generic secret assignment (password=..., api_key: ...) with an entropy gate",
            List.of("password", "passwd", "pwd", "_pass", "passphrase", "secret", "api_key", "api-key",
                    "apikey", "access_key", "token"),
            "(?i:password|passwd|pwd|_pass|passphrase|secret|api[_-]?key|access[_-]?key|token)[A-Za-z0-9_.-]{0,30}+"
                    + "(?<!(?i:hash|sha1|sha256|sha512|md5|digest|checksum|fingerprint|count|length|_len|type|_url|_uri"
                    + "|path|file|name|_id|ids))"
                    + "\\\\?[\"']?\\s{0,4}+"
                    + "(?::=|=>|[:=])\\s{0,4}+\\\\?[\"']?([^\\s\"'`,;(){}\\[\\]<>$\\\\]{7,127}[^\\s\"'`,;(){}\\[\\]<>$\\\\.])",
            200, 3.0, DetectorShapes::plausibleSecret, 45, 8, true);

    private static final List<Detector> ALL = registry();

    private static List<Detector> registry() {
        List<Detector> all = new ArrayList<>(List.of(
                AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_BEDROCK_API_KEY,
                GITHUB_PAT, GITHUB_FINE_GRAINED_PAT, GITHUB_OAUTH_TOKEN, GITHUB_APP_TOKEN, GITHUB_REFRESH_TOKEN,
                GITLAB_PAT, GITLAB_TOKEN,
                SLACK_TOKEN, SLACK_APP_TOKEN, SLACK_WEBHOOK_URL,
                STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET,
                OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENROUTER_API_KEY, GROQ_API_KEY, XAI_API_KEY,
                GOOGLE_API_KEY, GCP_SERVICE_ACCOUNT_KEY,
                AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_ACCOUNT_KEY, AZURE_SAS_TOKEN, AZURE_SHARED_ACCESS_KEY,
                AZURE_AD_CLIENT_SECRET,
                DATABRICKS_TOKEN, NPM_TOKEN, PYPI_TOKEN, HUGGINGFACE_TOKEN, TWILIO_API_KEY, SENDGRID_API_KEY,
                SHOPIFY_TOKEN, DIGITALOCEAN_TOKEN, VAULT_TOKEN, POSTMAN_API_KEY, LINEAR_API_KEY, AGE_SECRET_KEY,
                PRIVATE_KEY_PEM, JWT));
        all.addAll(VendorDetectors.all());
        all.addAll(ContextDetectors.all());
        all.addAll(EncodedDetectors.all());
        all.add(URL_PASSWORD);
        all.add(GENERIC_SECRET);
        return List.copyOf(all);
    }

    private static final Map<String, Detector> BY_ID;

    static {
        Map<String, Detector> m = new LinkedHashMap<>();
        for (Detector d : ALL) {
            if (m.put(d.id(), d) != null) {
                throw new ExceptionInInitializerError("duplicate detector id " + d.id());
            }
        }
        BY_ID = Map.copyOf(m);
    }

    /**
     * Returns every built-in detector: the vendor formats of this class and of {@link VendorDetectors},
     * the context detectors of {@link ContextDetectors}, {@link #URL_PASSWORD}, and {@link #GENERIC_SECRET}
     * last.
     */
    public static List<Detector> all() {
        return ALL;
    }

    /** Returns the built-in detector with this id. */
    public static Optional<Detector> byId(String id) {
        return Optional.ofNullable(BY_ID.get(id));
    }

    /** Rejects common placeholders: listed words, one repeated character, variable references. */
    static boolean notPlaceholder(String s) {
        return DetectorShapes.notPlaceholder(s);
    }

    /** A name such as {@code process.env.API_TOKEN} or {@code settings_secret_value}: letters, underscores, dots, no digit. */
    static boolean looksLikeIdentifier(String s) {
        return DetectorShapes.looksLikeIdentifier(s);
    }
}
