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

    /** A vendor label, name characters, an assignment, then the secret in group 1 (the label is the keyword). */
    private static String label(String labelRegex) {
        return "(?i:" + labelRegex + ")[A-Za-z0-9_.-]{0,24}+" + ASSIGN;
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
     * Perplexity API key: {@code pplx-} then 48 alphanumerics. Source: Perplexity API documentation,
     * "Getting started", API key (https://docs.perplexity.ai/getting-started).
     */
    public static final Detector PERPLEXITY_API_KEY = prefixed("perplexity-api-key", "Perplexity API key (pplx-)",
            List.of("pplx-"), NB + "pplx-[A-Za-z0-9]{40,56}" + NA, 61, 3.0, null);

    /**
     * Replicate API token: {@code r8_} then 37 alphanumerics. Source: Replicate documentation, "Authentication"
     * (https://replicate.com/docs/reference/http#authentication).
     */
    public static final Detector REPLICATE_API_TOKEN = prefixed("replicate-api-token", "Replicate API token (r8_)",
            List.of("r8_"), NB + "r8_[A-Za-z0-9]{37}" + NA, 40, 3.0, null);

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
     * [A-Za-z0-9_-] which in issued tokens start with {@code AA}; found bare anywhere by its
     * {@code :AA}. Source: Telegram Bot API, "Authorizing your bot"
     * (https://core.telegram.org/bots/api#authorizing-your-bot).
     */
    public static final Detector TELEGRAM_BOT_TOKEN = new Detector("telegram-bot-token", "Telegram bot token (id:AA...)",
            List.of(":aa"),
            Pattern.compile("(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}" + NA_URL),
            0, 3.0, checked(null), 11, 60, false);

    /**
     * Discord bot token: three base64url parts joined by dots — the bot's user id in base64 (24 to 28
     * characters, starting M, N or O), a timestamp (6), an HMAC (27 to 40). Reported after a Discord
     * label or the {@code Bot} authorization scheme. Source: Discord Developer Portal, "Authentication",
     * bot tokens (https://discord.com/developers/docs/reference#authentication).
     */
    public static final Detector DISCORD_BOT_TOKEN = labelled("discord-bot-token", "Discord bot token (after a label or Bot)",
            List.of("discord", "bot "),
            "(?:(?i:bot)\\s{1,4}+|" + label("discord") + ")([MNO][A-Za-z0-9_-]{23,27}\\.[A-Za-z0-9_-]{6}\\.[A-Za-z0-9_-]{27,40})"
                    + NA_URL, 120, 3.5, null);

    /**
     * Atlassian API token (Jira, Confluence, Bitbucket Cloud): {@code ATATT3} (user API token) or
     * {@code ATCTT3} (admin/organization key) then about 186 characters of [A-Za-z0-9_=-] ending in an
     * eight-hex-digit checksum. Source: Atlassian Support, "Manage API tokens for your Atlassian account"
     * (https://support.atlassian.com/atlassian-account/docs/manage-api-tokens-for-your-atlassian-account/).
     */
    public static final Detector ATLASSIAN_API_TOKEN = prefixed("atlassian-api-token", "Atlassian API token (ATATT3...)",
            List.of("atatt3", "atctt3"), NB + "AT[AC]TT3[A-Za-z0-9_=-]{150,250}" + NA_URL, 260, 3.5, null);

    /**
     * Bitbucket app password: {@code ATBB} then 32 characters of [A-Za-z0-9_=.-]. Source: Bitbucket Cloud
     * documentation, "App passwords" (https://support.atlassian.com/bitbucket-cloud/docs/app-passwords/).
     */
    public static final Detector BITBUCKET_APP_PASSWORD = prefixed("bitbucket-app-password", "Bitbucket app password (ATBB)",
            List.of("atbb"), NB + "ATBB[A-Za-z0-9_=.-]{28,40}" + NA_URL, 44, 3.0, null);

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
     * Mailchimp API key: 32 hex digits, a dash, the data centre ({@code us1}..{@code us21}). Source: Mailchimp
     * Marketing API, "Quick start", API key and server prefix
     * (https://mailchimp.com/developer/marketing/guides/quick-start/).
     */
    public static final Detector MAILCHIMP_API_KEY = new Detector("mailchimp-api-key", "Mailchimp API key (hex-usN)",
            List.of("-us"), Pattern.compile(NB + "[a-f0-9]{32}-us[0-9]{1,2}" + NA), 0, 3.0, checked(null), 32, 37, false);

    /**
     * Figma personal access token: {@code figd_} then 40 characters of [A-Za-z0-9_-]. Source: Figma
     * developers, "Access tokens" (https://www.figma.com/developers/api#access-tokens).
     */
    public static final Detector FIGMA_TOKEN = prefixed("figma-token", "Figma personal access token (figd_)",
            List.of("figd_"), NB + "figd_[A-Za-z0-9_-]{38,43}" + NA_URL, 48, 3.0, null);

    /**
     * Typeform personal access token: {@code tfp_}, 44 to 59 characters of [A-Za-z0-9_-]. Source: Typeform
     * developers, "Personal access token" (https://www.typeform.com/developers/get-started/personal-access-token/).
     */
    public static final Detector TYPEFORM_TOKEN = prefixed("typeform-token", "Typeform personal access token (tfp_)",
            List.of("tfp_"), NB + "tfp_[A-Za-z0-9_.=-]{40,64}" + NA_URL, 68, 3.0, null);

    /**
     * Contentful personal access token: {@code CFPAT-} then 43 characters of [A-Za-z0-9_-]. Source: Contentful
     * documentation, "Authentication", personal access tokens
     * (https://www.contentful.com/developers/docs/references/authentication/).
     */
    public static final Detector CONTENTFUL_TOKEN = prefixed("contentful-token", "Contentful personal access token (CFPAT-)",
            List.of("cfpat-"), NB + "CFPAT-[A-Za-z0-9_-]{43}" + NA_URL, 49, 3.0, null);

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
     * account, {@code ct} CLI, {@code scim}, {@code audit}), an optional config name for service tokens,
     * and 40 to 44 alphanumerics. Source: Doppler documentation, "Token formats"
     * (https://docs.doppler.com/docs/token-formats).
     */
    public static final Detector DOPPLER_TOKEN = prefixed("doppler-token", "Doppler token (dp.pt., dp.st., ...)",
            List.of("dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."),
            NB + "dp\\.(?:pt|st|sa|ct|scim|audit)\\.(?:[a-z0-9_-]{2,35}\\.)?[A-Za-z0-9]{40,44}" + NA, 90, 3.0, null);

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
     * Vercel tokens with a type prefix: {@code vcp_} (personal), {@code vci_} (integration), {@code vca_}
     * (app access), {@code vcr_} (app refresh), {@code vck_} (API key), then 24 to 64 alphanumerics.
     * Source: Vercel changelog, "Vercel tokens now have identifiable prefixes"
     * (https://vercel.com/changelog).
     */
    public static final Detector VERCEL_TOKEN = prefixed("vercel-token", "Vercel token (vcp_, vci_, vca_, vcr_, vck_)",
            List.of("vcp_", "vci_", "vca_", "vcr_", "vck_"), NB + "vc[pcairk]_[A-Za-z0-9]{24,64}" + NA, 68, 3.0, null);

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
    public static final Detector HEROKU_API_KEY_LEGACY = labelled("heroku-api-key-legacy", "Heroku legacy API key (UUID after a Heroku label)",
            List.of("heroku"), label("heroku") + "([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})" + NA,
            90, 3.0, null);

    /**
     * Fly.io tokens: macaroon tokens {@code FlyV1 fm1_}/{@code fm2_} (a space, then base64url and commas)
     * and the older {@code fo1_} plus 43 base64url characters. Source: Fly.io documentation, "Access tokens"
     * (https://fly.io/docs/security/tokens/).
     */
    public static final Detector FLY_IO_TOKEN = prefixed("fly-io-token", "Fly.io access token (FlyV1 fm2_, fo1_)",
            List.of("flyv1 ", "fo1_"), NB + "(?:FlyV1 fm[12][ar]?_[A-Za-z0-9+/=_,-]{100,4000}|fo1_[A-Za-z0-9_-]{43})"
                    + "(?![A-Za-z0-9+/=_,-])", 4020, 3.5, null);

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
     * Buildkite API access token: {@code bkua_} then 40 hex digits; agent tokens {@code bkat_}. Source:
     * Buildkite documentation, "API access tokens" (https://buildkite.com/docs/apis/managing-api-tokens).
     */
    public static final Detector BUILDKITE_TOKEN = prefixed("buildkite-token", "Buildkite token (bkua_, bkat_)",
            List.of("bkua_", "bkat_"), NB + "bk(?:ua|at)_[a-f0-9]{40}" + NA, 45, 3.0, null);

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
     * JFrog Artifactory API key ({@code AKCp} then 69 alphanumerics) and identity/reference token (base64
     * of {@code reftkn:}, starting {@code cmVmdGtuOjAx}, then 52 more). Source: JFrog documentation,
     * "Access tokens" and "API key" (https://jfrog.com/help/r/jfrog-platform-administration-documentation/access-tokens).
     */
    public static final Detector JFROG_TOKEN = prefixed("jfrog-token", "JFrog API key or reference token (AKCp, cmVmdGtu)",
            List.of("akcp", "cmvmdgtu"), NB + "(?:AKCp[A-Za-z0-9]{69}|cmVmdGtuOjAx[A-Za-z0-9]{52})" + NA, 73, 3.0, null);

    /**
     * SonarQube / SonarCloud tokens: {@code sqp_} (project), {@code sqa_} (global analysis), {@code squ_}
     * (user) then 40 hex digits. Source: SonarQube documentation, "Managing your tokens"
     * (https://docs.sonarsource.com/sonarqube-server/latest/user-guide/managing-tokens/).
     */
    public static final Detector SONAR_TOKEN = prefixed("sonar-token", "SonarQube token (sqp_, sqa_, squ_)",
            List.of("sqp_", "sqa_", "squ_"), NB + "sq[pau]_[a-f0-9]{40}" + NA, 44, 3.0, null);

    /**
     * RubyGems API key: {@code rubygems_} then 48 hex digits. Source: RubyGems guides, "API key scopes"
     * (https://guides.rubygems.org/api-key-scopes/).
     */
    public static final Detector RUBYGEMS_API_KEY = prefixed("rubygems-api-key", "RubyGems API key (rubygems_)",
            List.of("rubygems_"), NB + "rubygems_[a-f0-9]{48}" + NA, 57, 3.0, null);

    /**
     * NuGet API key: {@code oy2} then 43 lower-case alphanumerics. Source: Microsoft Learn, "Scoped API keys"
     * for nuget.org (https://learn.microsoft.com/nuget/nuget-org/scoped-api-keys).
     */
    public static final Detector NUGET_API_KEY = prefixed("nuget-api-key", "NuGet API key (oy2)",
            List.of("oy2"), NB + "oy2[a-z0-9]{43}" + NA, 46, 3.0, null);

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
     * Prefect API key: {@code pnu_} then 36 alphanumerics. Source: Prefect documentation, "Manage API keys"
     * (https://docs.prefect.io/v3/manage/cloud/manage-users/api-keys).
     */
    public static final Detector PREFECT_API_KEY = prefixed("prefect-api-key", "Prefect API key (pnu_)",
            List.of("pnu_"), NB + "pnu_[A-Za-z0-9]{36}" + NA, 40, 3.0, null);

    /**
     * ReadMe API key: {@code rdme_} then 70 lower-case alphanumerics. Source: ReadMe documentation,
     * "Authentication" (https://docs.readme.com/main/reference/intro/authentication).
     */
    public static final Detector README_API_KEY = prefixed("readme-api-key", "ReadMe API key (rdme_)",
            List.of("rdme_"), NB + "rdme_[a-z0-9]{70}" + NA, 75, 3.0, null);

    /**
     * Infracost API key: {@code ico-} then 32 alphanumerics. Source: Infracost documentation,
     * "Get an API key" (https://www.infracost.io/docs/).
     */
    public static final Detector INFRACOST_API_KEY = prefixed("infracost-api-key", "Infracost API key (ico-)",
            List.of("ico-"), NB + "ico-[A-Za-z0-9]{32}" + NA, 36, 3.0, null);

    // ---------------------------------------------------------------- observability and operations, by label

    /**
     * New Relic keys: user API keys {@code NRAK-} (27 upper-case alphanumerics), admin {@code NRAA-},
     * Insights insert/query {@code NRII-}/{@code NRIQ-} (32 of [A-Za-z0-9_-]), browser {@code NRJS-} (19
     * hex), and ingest license keys (36 hex digits ending {@code NRAL}). Source: New Relic documentation,
     * "New Relic API keys" (https://docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys/).
     */
    public static final Detector NEW_RELIC_KEY = new Detector("new-relic-key", "New Relic API or license key (NRAK-, ...NRAL)",
            List.of("nrak-", "nraa-", "nrii-", "nriq-", "nrjs-", "nral"),
            Pattern.compile("(?<![A-Za-z0-9_-])(?:NRA[AK]-[A-Z0-9]{27}|NRI[IQ]-[A-Za-z0-9_-]{32}|NRJS-[a-f0-9]{19}"
                    + "|[a-f0-9]{36}NRAL)" + NA_URL),
            0, 3.0, checked(null), 36, 40, false);

    /**
     * Datadog API key (32 hex digits) and application key (40 hex digits) after a Datadog label
     * ({@code DD_API_KEY}, {@code DD_APP_KEY}, {@code datadog_api_key}, the {@code DD-API-KEY} and
     * {@code DD-APPLICATION-KEY} headers). Source: Datadog documentation, "API and Application Keys"
     * (https://docs.datadoghq.com/account_management/api-app-keys/).
     */
    public static final Detector DATADOG_KEY = labelled("datadog-key", "Datadog API or application key (after a label)",
            List.of("dd_api", "dd-api", "dd_app", "dd-app", "datadog"),
            label("dd[_-]api|dd[_-]app|datadog") + "([a-f0-9]{40}|[a-f0-9]{32})" + NA, 110, 3.0, null);

    /**
     * PagerDuty REST API key: 20 characters of [A-Za-z0-9_+-], after {@code Token token=} (PagerDuty's
     * authorization scheme) or a PagerDuty label. Source: PagerDuty developer documentation,
     * "Authentication" (https://developer.pagerduty.com/docs/authentication).
     */
    public static final Detector PAGERDUTY_API_KEY = labelled("pagerduty-api-key", "PagerDuty API key (Token token=, or a label)",
            List.of("token token=", "pagerduty"),
            "(?:(?i:token token=)|" + label("pagerduty") + ")([A-Za-z0-9_+-]{20})(?![A-Za-z0-9_+-])", 80, 3.0,
            DetectorShapes::plausibleSecret);

    /**
     * Okta API token: {@code 00} then 40 characters of [A-Za-z0-9_-], after the {@code SSWS} authorization
     * scheme or an Okta label. Source: Okta developer documentation, "Create an API token"
     * (https://developer.okta.com/docs/guides/create-an-api-token/main/).
     */
    public static final Detector OKTA_API_TOKEN = labelled("okta-api-token", "Okta API token (SSWS 00..., or a label)",
            List.of("ssws ", "okta"),
            "(?:(?i:ssws)\\s{1,4}|" + label("okta") + ")(00[A-Za-z0-9_-]{40})" + NA_URL, 90, 3.0, null);

    /**
     * Twilio auth token: 32 hex digits after a Twilio label ({@code TWILIO_AUTH_TOKEN=},
     * {@code twilio_token:}). Source: Twilio documentation, "Auth tokens and how to change them"
     * (https://www.twilio.com/docs/iam/access-tokens).
     */
    public static final Detector TWILIO_AUTH_TOKEN = labelled("twilio-auth-token", "Twilio auth token (after a Twilio label)",
            List.of("twilio"), label("twilio") + "([a-f0-9]{32})" + NA, 80, 3.0, null);

    /**
     * Cloudflare API token (40 characters of [A-Za-z0-9_-]) or global API key (37 hex digits) after a
     * Cloudflare label ({@code CLOUDFLARE_API_TOKEN=}, {@code CF_API_KEY:}). Source: Cloudflare
     * documentation, "Create API token" (https://developers.cloudflare.com/fundamentals/api/get-started/create-token/).
     */
    public static final Detector CLOUDFLARE_API_TOKEN = labelled("cloudflare-api-token", "Cloudflare API token or key (after a label)",
            List.of("cloudflare", "cf_api", "cf-api", "cf_token"),
            label("cloudflare|cf[_-]api|cf_token") + "([A-Za-z0-9_-]{40}|[a-f0-9]{37})" + NA_URL, 100, 3.0,
            DetectorShapes::plausibleSecret);

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
        return List.of(OPENAI_ADMIN_KEY, PERPLEXITY_API_KEY, REPLICATE_API_TOKEN, LANGSMITH_API_KEY,
                TELEGRAM_BOT_TOKEN, DISCORD_BOT_TOKEN, ATLASSIAN_API_TOKEN, BITBUCKET_APP_PASSWORD, NOTION_TOKEN,
                MAILGUN_API_KEY, MAILCHIMP_API_KEY, FIGMA_TOKEN, TYPEFORM_TOKEN, CONTENTFUL_TOKEN,
                SQUARE_TOKEN, SHIPPO_TOKEN, DUFFEL_TOKEN, EASYPOST_API_KEY, FLUTTERWAVE_SECRET_KEY,
                SUPABASE_KEY, PLANETSCALE_TOKEN, DOPPLER_TOKEN, FIREBASE_FCM_SERVER_KEY,
                GOOGLE_OAUTH_CLIENT_SECRET, GOOGLE_OAUTH_TOKEN,
                VERCEL_TOKEN, NETLIFY_TOKEN, HEROKU_API_KEY, HEROKU_API_KEY_LEGACY, FLY_IO_TOKEN, TERRAFORM_CLOUD_TOKEN, PULUMI_TOKEN,
                BUILDKITE_TOKEN, CIRCLECI_TOKEN, DOCKER_HUB_TOKEN, JFROG_TOKEN, SONAR_TOKEN, RUBYGEMS_API_KEY,
                NUGET_API_KEY, SENTRY_TOKEN, TAILSCALE_KEY, ONEPASSWORD_SERVICE_ACCOUNT_TOKEN, GRAFANA_TOKEN,
                ALIBABA_ACCESS_KEY_ID, MAPBOX_SECRET_TOKEN, ADAFRUIT_IO_KEY, PREFECT_API_KEY, README_API_KEY,
                INFRACOST_API_KEY, NEW_RELIC_KEY, DATADOG_KEY, PAGERDUTY_API_KEY, OKTA_API_TOKEN, TWILIO_AUTH_TOKEN,
                CLOUDFLARE_API_TOKEN, PUTTY_PRIVATE_KEY);
    }
}
