package dev.sluice.rules.redact;

import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * The vendor prefixes that occur only inside a long run of token characters: for each built-in detector
 * listed here, every match holds the listed keyword inside at least {@value KeywordPrefilter#RUN} run
 * characters in a row ({@code [A-Za-z0-9+/_-]}, see {@link KeywordPrefilter#isRunChar}), the keyword's own
 * bytes included. {@link KeywordPrefilter} scans such a keyword as a <em>run keyword</em>: it looks for it
 * only inside the long runs its vector pass flags, instead of verifying every position where a fingerprint
 * of it appears in prose and code. That is what keeps the keyword scan fast as vendor formats are added;
 * it drops no match, because no match exists outside such a run.
 *
 * <p>The claim for each entry, read off its pattern: the keyword is made of run characters, and the
 * pattern requires enough run characters right after it (right before it for a keyword that ends the
 * token's first part) for {@code keyword length + required characters >= 24}; for example
 * {@code ghp_[A-Za-z0-9]{36}} (4 + 36), {@code glpat-[A-Za-z0-9_-]{20,300}} (6 + 20),
 * {@code SK[0-9a-fA-F]{32}} (2 + 32), {@code [A-Za-z0-9_-]{16,250}T3BlbkFJ[A-Za-z0-9_-]{16,250}}
 * (16 + 8 + 16). Formats whose characters after the prefix may include one that is not a run character
 * within the first 24 ({@code .}, {@code =}, {@code ~}), or that are shorter than 24 in all (AWS key ids,
 * Stripe keys, Slack tokens, Alibaba ids), are not listed and are scanned everywhere. In JSON bodies the
 * raw run is cut only by an escape that decodes to a run character ({@code \/}, {@code &#92;u00XX}),
 * around which the redactor scans the decoded text (the escape triggers). {@code LongRunKeywordsTest}
 * checks each entry against matches of its detector.
 */
final class LongRunKeywords {

    private LongRunKeywords() {
    }

    private static final Map<Detector, List<String>> KEYWORDS = keywords();

    private static Map<Detector, List<String>> keywords() {
        Map<Detector, List<String>> m = new IdentityHashMap<>();
        m.put(BuiltinDetectors.AWS_BEDROCK_API_KEY, List.of("absk", "bedrock-api-key-"));         // 4 + 60, 16 + 60
        m.put(BuiltinDetectors.GOOGLE_API_KEY, List.of("aiza"));                                   // 4 + 35
        m.put(BuiltinDetectors.GITHUB_PAT, List.of("ghp_"));                                       // 4 + 36
        m.put(BuiltinDetectors.GITHUB_FINE_GRAINED_PAT, List.of("github_pat_"));                   // 11 + 82
        m.put(BuiltinDetectors.GITHUB_OAUTH_TOKEN, List.of("gho_"));                               // 4 + 36
        m.put(BuiltinDetectors.GITHUB_APP_TOKEN, List.of("ghu_", "ghs_"));                         // 4 + 36
        m.put(BuiltinDetectors.GITHUB_REFRESH_TOKEN, List.of("ghr_"));                             // 4 + 36
        m.put(BuiltinDetectors.GITLAB_PAT, List.of("glpat-"));                                     // 6 + 20
        m.put(BuiltinDetectors.GITLAB_TOKEN, List.of("gldt-", "glrt-", "glcbt-", "glptt-", "glft-", "gloas-",
                "glsoat-", "glimt-", "glagent-", "glffct-"));                                      // 5 + 20 or more
        m.put(BuiltinDetectors.NPM_TOKEN, List.of("npm_"));                                        // 4 + 36
        m.put(BuiltinDetectors.PYPI_TOKEN, List.of("pypi-age"));                                   // 8 + 11 + 50
        m.put(BuiltinDetectors.SLACK_APP_TOKEN, List.of("xapp-"));                                 // 5 + 1-8-6-32 with dashes
        m.put(BuiltinDetectors.TWILIO_API_KEY, List.of("sk"));                                     // 2 + 32
        m.put(BuiltinDetectors.DATABRICKS_TOKEN, List.of("dapi"));                                 // 4 + 32
        m.put(BuiltinDetectors.SHOPIFY_TOKEN, List.of("shpat_", "shpss_", "shpca_", "shppa_"));    // 6 + 32
        m.put(BuiltinDetectors.DIGITALOCEAN_TOKEN, List.of("dop_v1_", "doo_v1_", "dor_v1_"));      // 7 + 64
        m.put(BuiltinDetectors.POSTMAN_API_KEY, List.of("pmak-"));                                 // 5 + 24 - 34
        m.put(BuiltinDetectors.LINEAR_API_KEY, List.of("lin_api_"));                               // 8 + 40
        m.put(BuiltinDetectors.OPENAI_API_KEY, List.of("t3blbkfj"));                               // 16 + 8 + 16
        m.put(BuiltinDetectors.ANTHROPIC_API_KEY, List.of("sk-ant-"));                             // 7 + 3 + 2 - 80
        m.put(BuiltinDetectors.OPENROUTER_API_KEY, List.of("sk-or-v1-"));                          // 9 + 64
        m.put(BuiltinDetectors.GROQ_API_KEY, List.of("gsk_"));                                     // 4 + 52
        m.put(BuiltinDetectors.XAI_API_KEY, List.of("xai-"));                                      // 4 + 80
        m.put(BuiltinDetectors.HUGGINGFACE_TOKEN, List.of("hf_", "api_org_"));                     // 3 + 34, 8 + 34
        m.put(BuiltinDetectors.AGE_SECRET_KEY, List.of("age-secret-key-1"));                       // 16 + 58
        m.put(VendorDetectors.OPENAI_ADMIN_KEY, List.of("sk-admin-"));                             // 9 + 40
        m.put(VendorDetectors.LANGSMITH_API_KEY, List.of("lsv2_"));                                // 5 + 3 + 32
        m.put(VendorDetectors.NOTION_TOKEN, List.of("ntn_", "secret_"));                           // 4 + 46, 7 + 43
        m.put(VendorDetectors.MAILGUN_API_KEY, List.of("key-"));                                   // 4 + 32
        m.put(VendorDetectors.SQUARE_TOKEN, List.of("eaaa", "sq0atp-", "sq0csp-"));                // 4 + 60, 7 + 22, 7 + 43
        m.put(VendorDetectors.SHIPPO_TOKEN, List.of("shippo_live_", "shippo_test_"));              // 12 + 40
        m.put(VendorDetectors.EASYPOST_API_KEY, List.of("ezak", "eztk"));                          // 4 + 54
        m.put(VendorDetectors.FLUTTERWAVE_SECRET_KEY, List.of("flwseck"));                         // 7 + 1 + 32
        m.put(VendorDetectors.SUPABASE_KEY, List.of("sbp_", "sb_secret_"));                        // 4 + 40, 10 + 20
        m.put(VendorDetectors.GOOGLE_OAUTH_CLIENT_SECRET, List.of("gocspx-"));                     // 7 + 28
        m.put(VendorDetectors.GOOGLE_OAUTH_TOKEN, List.of("1//0"));                                // 4 + 40 (not ya29.)
        m.put(VendorDetectors.VERCEL_TOKEN, List.of("vcp_", "vck_"));                              // 4 + 24
        m.put(VendorDetectors.NETLIFY_TOKEN, List.of("nfp_", "nfc_", "nfo_"));                     // 4 + 36
        m.put(VendorDetectors.HEROKU_API_KEY, List.of("hrku-"));                                   // 5 + 60
        m.put(VendorDetectors.PULUMI_TOKEN, List.of("pul-"));                                      // 4 + 40
        m.put(VendorDetectors.CIRCLECI_TOKEN, List.of("ccipat_"));                                 // 7 + 22 _ 40
        m.put(VendorDetectors.DOCKER_HUB_TOKEN, List.of("dckr_pat_", "dckr_oat_"));                // 9 + 27
        m.put(VendorDetectors.RUBYGEMS_API_KEY, List.of("rubygems_"));                             // 9 + 48
        m.put(VendorDetectors.SENTRY_TOKEN, List.of("sntryu_"));                                   // 7 + 64 (not sntrys_)
        m.put(VendorDetectors.TAILSCALE_KEY, List.of("tskey-"));                                   // 6 + 3 - 6 - 20
        m.put(VendorDetectors.ONEPASSWORD_SERVICE_ACCOUNT_TOKEN, List.of("ops_eyj"));              // 7 + 100
        m.put(VendorDetectors.GRAFANA_TOKEN, List.of("glsa_", "glc_"));                            // 5 + 32, 4 + 32
        m.put(VendorDetectors.ADAFRUIT_IO_KEY, List.of("aio_"));                                   // 4 + 28
        m.put(VendorDetectors.INFRACOST_API_KEY, List.of("ico-"));                                 // 4 + 32
        m.put(VendorDetectors.NEW_RELIC_KEY, List.of("nrak-", "nral"));                            // 5 + 27, 36 + 4
        return m;
    }

    /** Answers whether {@code keyword} of {@code d} occurs only inside a long run (see the class comment). */
    static boolean inLongRun(Detector d, String keyword) {
        List<String> ks = KEYWORDS.get(d);
        return ks != null && ks.contains(keyword);
    }

    /** The listed detectors and keywords, for tests. */
    static Map<Detector, List<String>> all() {
        return KEYWORDS;
    }
}
