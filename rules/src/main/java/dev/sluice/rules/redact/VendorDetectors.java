package dev.sluice.rules.redact;

import static dev.sluice.rules.redact.DetectorShapes.ASSIGN;
import static dev.sluice.rules.redact.DetectorShapes.NA;
import static dev.sluice.rules.redact.DetectorShapes.NA_URL;
import static dev.sluice.rules.redact.DetectorShapes.NB;
import static dev.sluice.rules.redact.DetectorShapes.checked;
import static dev.sluice.rules.redact.DetectorShapes.labelled;
import static dev.sluice.rules.redact.DetectorShapes.prefixed;

import java.util.List;
import java.util.regex.Pattern;

/**
 * The second wave of vendor formats (issue 21), one constant per format, registered in
 * {@link BuiltinDetectors#all()} after the first wave. Each constant's Javadoc says, in our own words,
 * what the format looks like and names the public description it follows (the vendor's documentation
 * or announcement of the prefix; where the vendor documents only the prefix, the length and alphabet are
 * those secret scanners publish, named too). Patterns are ours and use bounded quantifiers only. Formats
 * with a distinctive prefix are found anywhere, bare in prose too; formats without one are found next
 * to a vendor label (an assignment such as {@code DD_API_KEY=} or a header such as
 * {@code Authorization: SSWS}).
 */
public final class VendorDetectors {

    private VendorDetectors() {
    }

    /** A line break, real or written as an escape ({@code \n}, {@code \r\n}) in double-encoded text. */
    private static final String NL = "(?:\\r?\\n|\\\\r\\\\n|\\\\n)";

    /**
     * One precheck object for every vendor-label detector: the redactor evaluates a precheck shared by
     * several detectors of a keyword once per hit.
     */
    private static final Precheck LABEL_PRECHECK = DetectorShapes.ASSIGNMENT_PRECHECK;

    /**
     * A value after a vendor label (whose value pattern is strict): not a placeholder, a code identifier
     * or a code expression. Identifiers must be refused for the shared precheck to be sound (see
     * {@link Precheck#assignment(int, int, boolean)}), so a key made only of letters and underscores is not
     * reported (about 1 in 100 random 20-character PagerDuty keys; hex and base64 keys always hold a digit
     * in practice).
     */
    private static boolean labelledValue(String s) {
        return DetectorShapes.notPlaceholder(s) && !DetectorShapes.looksLikeIdentifier(s) && !DetectorShapes.looksLikeCode(s);
    }

    /** The words a vendor label ends in ({@code TWILIO_AUTH_TOKEN}, {@code DD_API_KEY}), as keywords. */
    private static final List<String> LABEL_WORDS = List.of("token", "api_key", "api-key", "apikey");

    /**
     * A detector for a secret after a vendor label such as {@code DATADOG_API_KEY=} or
     * {@code "twilio_auth_token": }: the vendor name ({@code vendorRegex}, case-insensitive, at a word
     * start), up to 16 name characters, a word of {@link #LABEL_WORDS} (the keyword: the scan gains no
     * new fingerprint), up to 12 more name characters, an assignment, then the secret ({@code valueRegex},
     * group 1). {@code maxVendorChars} bounds the vendor name.
     */
    private static Detector vendorLabel(String id, String description, String vendorRegex, int maxVendorChars,
                                        String valueRegex, int valueMaxChars) {
        int before = maxVendorChars + 17;
        String regex = NB + "(?i:" + vendorRegex + ")[A-Za-z0-9_.-]{0,16}?(?i:token|api[_-]?key)[A-Za-z0-9_.-]{0,12}+" + ASSIGN
                + "(" + valueRegex + ")";
        return new Detector(id, description, LABEL_WORDS, Pattern.compile(regex), 1, 3.0,
                checked(VendorDetectors::labelledValue), before, before + 32 + valueMaxChars, false,
                LABEL_PRECHECK);
    }

    // ---------------------------------------------------------------- LLM and AI platforms

    /**
     * OpenAI admin key: {@code sk-admin-} then base64url characters (the marker-less admin keys of the
     * Administration API). Source: OpenAI API reference, "Administration", admin API keys
     * (https://platform.openai.com/docs/api-reference/administration).
     */
    public static final Detector OPENAI_ADMIN_KEY = prefixed("openai-admin-key", "OpenAI admin key (sk-admin-)",
            List.of("sk-admin-"), NB + "sk-admin-[A-Za-z0-9_-]{40,250}" + NA_URL, 260, 3.5, null);

    /**
     * LangSmith API key: {@code lsv2_pt_} (personal) or {@code lsv2_sk_} (service), 32 hex digits, an
     * underscore and 10 hex digits. Source: LangSmith documentation, "Create an API key"
     * (https://docs.smith.langchain.com/administration/how_to_guides/organization_management/create_account_api_key).
     */
    public static final Detector LANGSMITH_API_KEY = prefixed("langsmith-api-key", "LangSmith API key (lsv2_pt_, lsv2_sk_)",
            List.of("lsv2_"), NB + "lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + NA, 51, 3.0, null);

    // ---------------------------------------------------------------- chat and collaboration

    /**
     * Telegram bot token: the bot's numeric id (8 to 10 digits), a colon, and 35 characters of
     * [A-Za-z0-9_-], after a Telegram label ({@code TELEGRAM_BOT_TOKEN=}; not yet in Bot API URLs). Source: Telegram Bot API, "Authorizing your bot" and
     * "Making requests" (https://core.telegram.org/bots/api#authorizing-your-bot).
     */
    public static final Detector TELEGRAM_BOT_TOKEN = vendorLabel("telegram-bot-token",
            "Telegram bot token (after a Telegram label)", "telegram", 8, "[0-9]{8,10}:[A-Za-z0-9_-]{35}" + NA_URL, 46);

    /**
     * Discord bot token: three base64url parts joined by dots — the bot's user id in base64 (24 to 28
     * characters, starting M, N or O), a timestamp (6), an HMAC (27 to 40). Reported after a Discord
     * label ({@code DISCORD_TOKEN=}); after the {@code Bot} authorization scheme it is
     * {@code authorization-credential}'s. Source: Discord Developer Portal, "Authentication",
     * bot tokens (https://discord.com/developers/docs/reference#authentication).
     */
    public static final Detector DISCORD_BOT_TOKEN = vendorLabel("discord-bot-token", "Discord bot token (after a Discord label)",
            "discord", 7, "[MNO][A-Za-z0-9_-]{23,27}\\.[A-Za-z0-9_-]{6}\\.[A-Za-z0-9_-]{27,40}" + NA_URL, 75);

    /**
     * Atlassian API token (Jira, Confluence, Bitbucket Cloud): {@code ATATT3} (user API token) or
     * {@code ATCTT3} (admin/organization key) then about 186 characters of [A-Za-z0-9_=-] ending in an
     * eight-hex-digit checksum. Source: Atlassian Support, "Manage API tokens for your Atlassian account"
     * (https://support.atlassian.com/atlassian-account/docs/manage-api-tokens-for-your-atlassian-account/).
     */
    public static final Detector ATLASSIAN_API_TOKEN = prefixed("atlassian-api-token", "Atlassian API token (ATATT3...)",
            List.of("atatt3", "atctt3"), NB + "AT[AC]TT3[A-Za-z0-9_=-]{150,250}" + NA_URL, 260, 3.5, null);

    /**
     * Notion integration token: {@code ntn_} then 46 alphanumerics (current), or {@code secret_} then 43
     * alphanumerics (integrations created before September 2024). Source: Notion developers,
     * "Authorization" (https://developers.notion.com/docs/authorization).
     */
    public static final Detector NOTION_TOKEN = prefixed("notion-token", "Notion integration token (ntn_, secret_)",
            List.of("ntn_", "secret_"), NB + "(?:ntn_[A-Za-z0-9]{46}|secret_[A-Za-z0-9]{43})" + NA, 50, 3.5, null);

    /**
     * Mailgun private API key: {@code key-} then 32 hex digits. Source: Mailgun documentation,
     * "API keys" (https://documentation.mailgun.com/docs/mailgun/user-manual/get-started/#primary-account-api-key).
     */
    public static final Detector MAILGUN_API_KEY = prefixed("mailgun-api-key", "Mailgun API key (key-)",
            List.of("key-"), NB + "key-[a-f0-9]{32}" + NA, 36, 3.0, null);

    /**
     * Mailchimp API key: 32 hex digits, a dash, the data centre ({@code us1}..{@code us21}), after a
     * Mailchimp label ({@code MAILCHIMP_API_KEY=}). Source: Mailchimp Marketing API, "Quick start", API key
     * and server prefix (https://mailchimp.com/developer/marketing/guides/quick-start/).
     */
    public static final Detector MAILCHIMP_API_KEY = vendorLabel("mailchimp-api-key", "Mailchimp API key (hex-usN after a label)",
            "mailchimp", 9, "[a-f0-9]{32}-us[0-9]{1,2}" + NA, 37);

    /**
     * Typeform personal access token: {@code tfp_}, 44 to 59 characters of [A-Za-z0-9_-]. Source: Typeform
     * developers, "Personal access token" (https://www.typeform.com/developers/get-started/personal-access-token/).
     */
    public static final Detector TYPEFORM_TOKEN = prefixed("typeform-token", "Typeform personal access token (tfp_)",
            List.of("tfp_"), NB + "tfp_[A-Za-z0-9_.=-]{40,64}" + NA_URL, 68, 3.0, null);

    // ---------------------------------------------------------------- payments and commerce

    /**
     * Square tokens: production access tokens {@code EAAA} plus 60 characters of [A-Za-z0-9_-], legacy
     * access tokens {@code sq0atp-} (22 characters) and application secrets {@code sq0csp-} (43). Source:
     * Square developer documentation, "Access tokens and other credentials"
     * (https://developer.squareup.com/docs/build-basics/access-tokens).
     */
    public static final Detector SQUARE_TOKEN = prefixed("square-token", "Square access token or application secret",
            List.of("eaaa", "sq0atp-", "sq0csp-"),
            NB + "(?:EAAA[A-Za-z0-9_-]{60}|sq0atp-[A-Za-z0-9_-]{22}|sq0csp-[A-Za-z0-9_-]{43})" + NA_URL, 64, 3.5, null);

    /**
     * Shippo API token: {@code shippo_live_} or {@code shippo_test_} then 40 hex digits. Source: Shippo
     * documentation, "Authentication" (https://docs.goshippo.com/docs/guides_general/authentication/).
     */
    public static final Detector SHIPPO_TOKEN = prefixed("shippo-token", "Shippo API token (shippo_live_, shippo_test_)",
            List.of("shippo_live_", "shippo_test_"), NB + "shippo_(?:live|test)_[a-f0-9]{40}" + NA, 52, 3.0, null);

    /**
     * Duffel access token: {@code duffel_live_} or {@code duffel_test_} then 43 characters of
     * [A-Za-z0-9_=-]. Source: Duffel documentation, "Authentication"
     * (https://duffel.com/docs/api/overview/making-requests/authentication).
     */
    public static final Detector DUFFEL_TOKEN = prefixed("duffel-token", "Duffel access token (duffel_live_, duffel_test_)",
            List.of("duffel_live_", "duffel_test_"), NB + "duffel_(?:live|test)_[A-Za-z0-9_=-]{43}" + NA_URL, 55, 3.0, null);

    /**
     * EasyPost API key: {@code EZAK} (production) or {@code EZTK} (test) then 54 alphanumerics. Source:
     * EasyPost documentation, "Authentication" (https://docs.easypost.com/docs/authentication).
     */
    public static final Detector EASYPOST_API_KEY = prefixed("easypost-api-key", "EasyPost API key (EZAK, EZTK)",
            List.of("ezak", "eztk"), NB + "EZ[AT]K[A-Za-z0-9]{54}" + NA, 58, 3.0, null);

    /**
     * Flutterwave secret key: {@code FLWSECK-} or {@code FLWSECK_TEST-}, 32 hex digits, {@code -X}.
     * Source: Flutterwave documentation, "API keys" (https://developer.flutterwave.com/docs/api-keys).
     */
    public static final Detector FLUTTERWAVE_SECRET_KEY = prefixed("flutterwave-secret-key", "Flutterwave secret key (FLWSECK)",
            List.of("flwseck"), NB + "FLWSECK(?:_TEST)?-[a-h0-9]{32}-X" + NA, 47, 3.0, null);

    // ---------------------------------------------------------------- databases and backends

    /**
     * Supabase keys: personal access tokens {@code sbp_} plus 40 hex digits, and the newer secret API
     * keys {@code sb_secret_} plus base64url. (Publishable {@code sb_publishable_} keys are public.) Source:
     * Supabase documentation, "Understanding API keys" (https://supabase.com/docs/guides/api/api-keys).
     */
    public static final Detector SUPABASE_KEY = prefixed("supabase-key", "Supabase access token or secret key (sbp_, sb_secret_)",
            List.of("sbp_", "sb_secret_"), NB + "(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,80})" + NA_URL, 90, 3.0, null);

    /**
     * PlanetScale tokens and passwords: {@code pscale_tkn_}, {@code pscale_pw_}, {@code pscale_oauth_} then
     * 32 to 64 characters of [A-Za-z0-9_.-]. Source: PlanetScale documentation, "Service tokens" and
     * "Connection strings" (https://planetscale.com/docs/concepts/service-tokens).
     */
    public static final Detector PLANETSCALE_TOKEN = prefixed("planetscale-token", "PlanetScale token or password (pscale_)",
            List.of("pscale_tkn_", "pscale_pw_", "pscale_oauth_"),
            NB + "pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,64}" + NA_URL, 80, 3.0, null);

    /**
     * Doppler tokens: {@code dp.} then the kind ({@code pt} personal, {@code st} service, {@code sa} service
     * account, {@code ct} CLI; SCIM and audit tokens are not covered), an optional config name for service tokens,
     * and 40 to 44 alphanumerics. Source: Doppler documentation, "Token formats"
     * (https://docs.doppler.com/docs/token-formats).
     */
    public static final Detector DOPPLER_TOKEN = prefixed("doppler-token", "Doppler token (dp.pt., dp.st., ...)",
            List.of("dp.pt.", "dp.st.", "dp.sa.", "dp.ct."),
            NB + "dp\\.(?:pt|st|sa|ct)\\.(?:[a-z0-9_-]{2,35}\\.)?[A-Za-z0-9]{40,44}" + NA, 90, 3.0, null);

    /**
     * Firebase Cloud Messaging legacy server key: {@code AAAA}, 7 characters, {@code :APA91b}, then about
     * 134 characters of [A-Za-z0-9_-]. Source: Firebase documentation, "Migrate from legacy FCM APIs",
     * server keys (https://firebase.google.com/docs/cloud-messaging/migrate-v1).
     */
    public static final Detector FIREBASE_FCM_SERVER_KEY = new Detector("firebase-fcm-server-key",
            "Firebase Cloud Messaging server key (AAAA...:APA91b...)", List.of(":apa91b"),
            Pattern.compile(NB + "AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{120,150}" + NA_URL),
            0, 3.5, checked(null), 11, 170, false);

    // ---------------------------------------------------------------- Google

    /**
     * Google OAuth client secret: {@code GOCSPX-} then 28 characters of [A-Za-z0-9_-]. Source: Google
     * Cloud, "Client secrets" (https://support.google.com/cloud/answer/15549257).
     */
    public static final Detector GOOGLE_OAUTH_CLIENT_SECRET = prefixed("google-oauth-client-secret",
            "Google OAuth client secret (GOCSPX-)", List.of("gocspx-"), NB + "GOCSPX-[A-Za-z0-9_-]{28}" + NA_URL, 35, 3.0, null);

    /**
     * Google OAuth 2.0 access token ({@code ya29.} then base64url) and refresh token ({@code 1//0} then
     * base64url). Source: Google Identity, "Using OAuth 2.0 to Access Google APIs"
     * (https://developers.google.com/identity/protocols/oauth2); the prefixes are those of issued tokens.
     */
    public static final Detector GOOGLE_OAUTH_TOKEN = prefixed("google-oauth-token", "Google OAuth access or refresh token (ya29., 1//0)",
            List.of("ya29.", "1//0"), "(?<![A-Za-z0-9/])(?:ya29\\.[A-Za-z0-9_-]{30,2000}|1//0[A-Za-z0-9_-]{40,500})" + NA_URL,
            2010, 3.5, null);

    // ---------------------------------------------------------------- hosting, deploy and CI

    /**
     * Vercel tokens with a type prefix: {@code vcp_} (personal) and {@code vck_} (API key), then 24 to 64
     * alphanumerics (the integration, app access and refresh prefixes are not covered).
     * Source: Vercel changelog, "Vercel tokens now have identifiable prefixes"
     * (https://vercel.com/changelog).
     */
    public static final Detector VERCEL_TOKEN = prefixed("vercel-token", "Vercel token (vcp_, vck_)",
            List.of("vcp_", "vck_"), NB + "vc[pk]_[A-Za-z0-9]{24,64}" + NA, 68, 3.0, null);

    /**
     * Netlify tokens: {@code nfp_} (personal access), {@code nfc_}, {@code nfo_} (OAuth) then 36 to 40
     * alphanumerics. Source: Netlify documentation, "Netlify API", authentication
     * (https://docs.netlify.com/api/get-started/#authentication).
     */
    public static final Detector NETLIFY_TOKEN = prefixed("netlify-token", "Netlify access token (nfp_, nfc_, nfo_)",
            List.of("nfp_", "nfc_", "nfo_"), NB + "nf[pco]_[A-Za-z0-9]{36,40}" + NA, 44, 3.0, null);

    /**
     * Heroku API key in its current form: {@code HRKU-} then 60 characters of [A-Za-z0-9_-]. Source: Heroku
     * Dev Center, "Heroku CLI authentication" (https://devcenter.heroku.com/articles/authentication) and the
     * Heroku changelog announcing the {@code HRKU-} prefix.
     */
    public static final Detector HEROKU_API_KEY = prefixed("heroku-api-key", "Heroku API key (HRKU-)",
            List.of("hrku-"), NB + "HRKU-[A-Za-z0-9_-]{60}" + NA_URL, 65, 3.0, null);

    /**
     * Heroku legacy API key: a UUID after a Heroku label ({@code HEROKU_API_KEY=...}, {@code heroku_token:}).
     * Source: Heroku Dev Center, "Heroku CLI authentication" (https://devcenter.heroku.com/articles/authentication).
     */
    public static final Detector HEROKU_API_KEY_LEGACY = vendorLabel("heroku-api-key-legacy",
            "Heroku legacy API key (UUID after a Heroku label)", "heroku", 6,
            "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}" + NA, 36);

    /**
     * Terraform Cloud / HCP Terraform API token: 14 alphanumerics, {@code .atlasv1.}, then 60 to 70
     * characters of [A-Za-z0-9_=-]. Source: HashiCorp, "API tokens" (HCP Terraform documentation,
     * https://developer.hashicorp.com/terraform/cloud-docs/users-teams-organizations/api-tokens).
     */
    public static final Detector TERRAFORM_CLOUD_TOKEN = new Detector("terraform-cloud-token",
            "Terraform Cloud API token (xxx.atlasv1.yyy)", List.of(".atlasv1."),
            Pattern.compile(NB + "[A-Za-z0-9]{14}\\.atlasv1\\.[A-Za-z0-9_=-]{60,70}" + NA_URL),
            0, 3.5, checked(null), 14, 93, false);

    /**
     * Pulumi access token: {@code pul-} then 40 hex digits. Source: Pulumi documentation, "Access tokens"
     * (https://www.pulumi.com/docs/pulumi-cloud/access-management/access-tokens/).
     */
    public static final Detector PULUMI_TOKEN = prefixed("pulumi-token", "Pulumi access token (pul-)",
            List.of("pul-"), NB + "pul-[a-f0-9]{40}" + NA, 44, 3.0, null);

    /**
     * CircleCI personal API token: {@code CCIPAT_}, 22 alphanumerics, an underscore, 40 hex digits.
     * Source: CircleCI documentation, "Managing API tokens" (https://circleci.com/docs/managing-api-tokens/).
     */
    public static final Detector CIRCLECI_TOKEN = prefixed("circleci-token", "CircleCI personal API token (CCIPAT_)",
            List.of("ccipat_"), NB + "CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}" + NA, 70, 3.0, null);

    /**
     * Docker Hub access tokens: personal {@code dckr_pat_} and organization {@code dckr_oat_} then 27 to 36
     * characters of [A-Za-z0-9_-]. Source: Docker documentation, "Personal access tokens"
     * (https://docs.docker.com/security/for-developers/access-tokens/).
     */
    public static final Detector DOCKER_HUB_TOKEN = prefixed("docker-hub-token", "Docker Hub access token (dckr_pat_, dckr_oat_)",
            List.of("dckr_pat_", "dckr_oat_"), NB + "dckr_[po]at_[A-Za-z0-9_-]{27,36}" + NA_URL, 45, 3.0, null);

    /**
     * RubyGems API key: {@code rubygems_} then 48 hex digits. Source: the RubyGems guides, "API key
     * scopes".
     */
    public static final Detector RUBYGEMS_API_KEY = prefixed("rubygems-api-key", "RubyGems API key (rubygems_)",
            List.of("rubygems_"), NB + "rubygems_[a-f0-9]{48}" + NA, 57, 3.0, null);

    /**
     * Sentry tokens: user auth tokens {@code sntryu_} plus 64 hex digits, organization auth tokens
     * {@code sntrys_} plus base64 (a JSON payload) and an underscore-separated secret. Source: Sentry
     * documentation, "Auth tokens" (https://docs.sentry.io/account/auth-tokens/).
     */
    public static final Detector SENTRY_TOKEN = prefixed("sentry-token", "Sentry auth token (sntryu_, sntrys_)",
            List.of("sntryu_", "sntrys_"),
            NB + "(?:sntryu_[a-f0-9]{64}|sntrys_[A-Za-z0-9+/=]{40,400}_[A-Za-z0-9+/]{40,50})(?![A-Za-z0-9+/=_])", 460, 3.5, null);

    /**
     * Tailscale keys: {@code tskey-} then the kind ({@code api}, {@code auth}, {@code client},
     * {@code scim}, {@code webhook}), a key id and a secret, dash-separated. Source: Tailscale documentation,
     * "API access tokens" and "Auth keys" (https://tailscale.com/kb/1085/auth-keys).
     */
    public static final Detector TAILSCALE_KEY = prefixed("tailscale-key", "Tailscale API or auth key (tskey-)",
            List.of("tskey-"), NB + "tskey-(?:api|auth|client|scim|webhook)-[A-Za-z0-9]{6,20}-[A-Za-z0-9]{20,64}" + NA, 110, 3.0, null);

    /**
     * 1Password service-account token: {@code ops_eyJ} then base64 (a JSON document). Source: 1Password
     * developer documentation, "Service accounts" (https://developer.1password.com/docs/service-accounts/).
     */
    public static final Detector ONEPASSWORD_SERVICE_ACCOUNT_TOKEN = prefixed("onepassword-service-account-token",
            "1Password service-account token (ops_eyJ)", List.of("ops_eyj"),
            NB + "ops_eyJ[A-Za-z0-9+/]{100,2000}={0,2}(?![A-Za-z0-9+/=])", 2010, 3.5, null);

    /**
     * Grafana tokens: service-account tokens {@code glsa_} (32 alphanumerics, an underscore, 8 hex digits)
     * and Grafana Cloud access-policy tokens {@code glc_} (base64). Source: Grafana documentation,
     * "Service accounts" (https://grafana.com/docs/grafana/latest/administration/service-accounts/) and
     * "Grafana Cloud access policies".
     */
    public static final Detector GRAFANA_TOKEN = prefixed("grafana-token", "Grafana service-account or Cloud token (glsa_, glc_)",
            List.of("glsa_", "glc_"),
            NB + "(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,2})(?![A-Za-z0-9+/=])", 410, 3.5, null);

    /**
     * Alibaba Cloud AccessKey ID: {@code LTAI} then 12 to 20 alphanumerics. Source: Alibaba Cloud
     * documentation, "Create an AccessKey pair" (https://www.alibabacloud.com/help/en/ram/user-guide/create-an-accesskey-pair).
     */
    public static final Detector ALIBABA_ACCESS_KEY_ID = prefixed("alibaba-access-key-id", "Alibaba Cloud AccessKey ID (LTAI)",
            List.of("ltai"), NB + "LTAI[A-Za-z0-9]{12,20}" + NA, 24, 3.0, null);

    /**
     * Mapbox secret access token: {@code sk.eyJ} then base64url, a dot, base64url. (Public {@code pk.}
     * tokens are not reported.) Source: Mapbox documentation, "Access tokens"
     * (https://docs.mapbox.com/help/dive-deeper/access-tokens/).
     */
    public static final Detector MAPBOX_SECRET_TOKEN = prefixed("mapbox-secret-token", "Mapbox secret token (sk.eyJ)",
            List.of("sk.eyj"), NB + "sk\\.eyJ[A-Za-z0-9_-]{40,300}\\.[A-Za-z0-9_-]{20,50}" + NA_URL, 360, 3.5, null);

    /**
     * Adafruit IO key: {@code aio_} then 28 alphanumerics. Source: Adafruit IO API documentation,
     * "Authentication" (https://io.adafruit.com/api/docs/#authentication).
     */
    public static final Detector ADAFRUIT_IO_KEY = prefixed("adafruit-io-key", "Adafruit IO key (aio_)",
            List.of("aio_"), NB + "aio_[A-Za-z0-9]{28}" + NA, 32, 3.0, null);

    /**
     * Infracost API key: {@code ico-} then 32 alphanumerics. Source: Infracost documentation,
     * "Get an API key" (https://www.infracost.io/docs/).
     */
    public static final Detector INFRACOST_API_KEY = prefixed("infracost-api-key", "Infracost API key (ico-)",
            List.of("ico-"), NB + "ico-[A-Za-z0-9]{32}" + NA, 36, 3.0, null);

    // ---------------------------------------------------------------- observability and operations, by label

    /**
     * New Relic keys: user API keys {@code NRAK-} (27 upper-case alphanumerics) and ingest license keys
     * (36 hex digits ending {@code NRAL}); the rarer admin, Insights and browser keys are not covered. Source: New Relic documentation,
     * "New Relic API keys" (https://docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys/).
     */
    public static final Detector NEW_RELIC_KEY = new Detector("new-relic-key", "New Relic user API or license key (NRAK-, ...NRAL)",
            List.of("nrak-", "nral"),
            Pattern.compile("(?<![A-Za-z0-9_-])(?:NRAK-[A-Z0-9]{27}|[a-f0-9]{36}NRAL)" + NA_URL),
            0, 3.0, checked(null), 36, 40, false);

    /**
     * Datadog API key (32 hex digits) after a Datadog label ({@code DD_API_KEY}, {@code datadog_api_key},
     * the {@code DD-API-KEY} header; application keys are not covered yet). Source: Datadog documentation, "API and Application Keys"
     * (https://docs.datadoghq.com/account_management/api-app-keys/).
     */
    public static final Detector DATADOG_KEY = vendorLabel("datadog-key", "Datadog API key (after a label)",
            "dd|datadog", 7, "[a-f0-9]{32}" + NA, 32);

    /**
     * PagerDuty REST API key: 20 characters of [A-Za-z0-9_+-], after {@code Token token=} (PagerDuty's
     * authorization scheme) or a PagerDuty label. Source: PagerDuty developer documentation,
     * "Authentication" (https://developer.pagerduty.com/docs/authentication).
     */
    public static final Detector PAGERDUTY_API_KEY = new Detector("pagerduty-api-key",
            "PagerDuty API key (Token token=, or a label)", LABEL_WORDS,
            Pattern.compile("(?:(?i:token token=)|" + NB + "(?i:pagerduty|pd)[A-Za-z0-9_.-]{0,16}?(?i:token|api[_-]?key)"
                    + "[A-Za-z0-9_.-]{0,12}+" + ASSIGN + ")([A-Za-z0-9_+-]{20})(?![A-Za-z0-9_+-])"),
            1, 3.0, checked(VendorDetectors::labelledValue), 26, 100, false, LABEL_PRECHECK);

    /**
     * Okta API token: {@code 00} then 40 characters of [A-Za-z0-9_-], after an Okta label
     * ({@code OKTA_API_TOKEN=}); after the {@code SSWS} authorization scheme it is
     * {@code authorization-credential}'s. Source: Okta developer documentation, "Create an API token"
     * (https://developer.okta.com/docs/guides/create-an-api-token/main/).
     */
    public static final Detector OKTA_API_TOKEN = vendorLabel("okta-api-token", "Okta API token (00... after an Okta label)",
            "okta", 4, "00[A-Za-z0-9_-]{40}" + NA_URL, 42);

    /**
     * Twilio auth token: 32 hex digits after a Twilio label ({@code TWILIO_AUTH_TOKEN=},
     * {@code twilio_token:}). Source: Twilio documentation, "Auth tokens and how to change them"
     * (https://www.twilio.com/docs/iam/access-tokens).
     */
    public static final Detector TWILIO_AUTH_TOKEN = vendorLabel("twilio-auth-token", "Twilio auth token (after a Twilio label)",
            "twilio", 6, "[a-f0-9]{32}" + NA, 32);

    /**
     * Cloudflare API token (40 characters of [A-Za-z0-9_-]) or global API key (37 hex digits) after a
     * Cloudflare label ({@code CLOUDFLARE_API_TOKEN=}, {@code CF_API_KEY:}). Source: Cloudflare
     * documentation, "Create API token" (https://developers.cloudflare.com/fundamentals/api/get-started/create-token/).
     */
    public static final Detector CLOUDFLARE_API_TOKEN = vendorLabel("cloudflare-api-token",
            "Cloudflare API token or key (after a label)", "cloudflare|cf", 10, "[A-Za-z0-9_-]{40}" + NA_URL + "|[a-f0-9]{37}" + NA, 40);

    // ---------------------------------------------------------------- private keys

    /**
     * PuTTY private key file ({@code .ppk}, versions 2 and 3): the base64 lines after
     * {@code Private-Lines: N}. Source: PuTTY documentation, appendix C, "PPK file format"
     * (https://the.earth.li/~sgtatham/putty/0.78/htmldoc/AppendixC.html).
     */
    public static final Detector PUTTY_PRIVATE_KEY = labelled("putty-private-key", "PuTTY private key (.ppk Private-Lines)",
            List.of("private-lines:"),
            "(?i:private-lines):\\s{0,2}[0-9]{1,3}" + NL + "((?:[A-Za-z0-9+/=]{1,100}" + NL + "){0,119}[A-Za-z0-9+/=]{1,100})"
                    + "(?![A-Za-z0-9+/=-])", 12500, 3.0, null);


    /** The detectors of this class, in registration order. */
    static List<Detector> all() {
        return List.of(OPENAI_ADMIN_KEY, LANGSMITH_API_KEY, ATLASSIAN_API_TOKEN, NOTION_TOKEN, MAILGUN_API_KEY,
                TYPEFORM_TOKEN, SQUARE_TOKEN, SHIPPO_TOKEN, DUFFEL_TOKEN, EASYPOST_API_KEY, FLUTTERWAVE_SECRET_KEY,
                SUPABASE_KEY, PLANETSCALE_TOKEN, DOPPLER_TOKEN, FIREBASE_FCM_SERVER_KEY,
                GOOGLE_OAUTH_CLIENT_SECRET, GOOGLE_OAUTH_TOKEN,
                VERCEL_TOKEN, NETLIFY_TOKEN, HEROKU_API_KEY, TERRAFORM_CLOUD_TOKEN, PULUMI_TOKEN,
                CIRCLECI_TOKEN, DOCKER_HUB_TOKEN, RUBYGEMS_API_KEY,
                SENTRY_TOKEN, TAILSCALE_KEY, ONEPASSWORD_SERVICE_ACCOUNT_TOKEN, GRAFANA_TOKEN,
                ALIBABA_ACCESS_KEY_ID, MAPBOX_SECRET_TOKEN, ADAFRUIT_IO_KEY, INFRACOST_API_KEY, NEW_RELIC_KEY,
                PUTTY_PRIVATE_KEY,
                // after a vendor label: consecutive, so that their one shared precheck runs once per hit
                TELEGRAM_BOT_TOKEN, DISCORD_BOT_TOKEN, MAILCHIMP_API_KEY, HEROKU_API_KEY_LEGACY, DATADOG_KEY,
                PAGERDUTY_API_KEY, OKTA_API_TOKEN, TWILIO_AUTH_TOKEN, CLOUDFLARE_API_TOKEN);
    }
}
