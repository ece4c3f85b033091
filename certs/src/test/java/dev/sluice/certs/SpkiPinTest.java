package dev.sluice.certs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SpkiPinTest {

    /**
     * Self-signed certificates made with OpenSSL 3; pins computed with
     * {@code openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256
     * -binary | base64}.
     */
    static final String EC_CERT = "-----BEGIN CERTIFICATE-----\n"
            + "MIIBgDCCASWgAwIBAgIUXfJ2+fas1mFeImq2K32JbWjLnUQwCgYIKoZIzj0EAwIw\n"
            + "FTETMBEGA1UEAwwKcGluIHZlY3RvcjAeFw0yNjExMzAwOTQ4MzhaFw0zNjExMjcw\n"
            + "OTQ4MzhaMBUxEzARBgNVBAMMCnBpbiB2ZWN0b3IwWTATBgcqhkjOPQIBBggqhkjO\n"
            + "PQMBBwNCAASCBesgPKLfJWAGbU0YF7341/OoiEcaF4mqU6kQgu4CGOzhh0QsqiWc\n"
            + "ngupoXjBL1Fm7a9z7k+4bJ32vfdfJdfvo1MwUTAdBgNVHQ4EFgQUq4KjwQ99xpMS\n"
            + "9fpOkhv4pUjSuHswHwYDVR0jBBgwFoAUq4KjwQ99xpMS9fpOkhv4pUjSuHswDwYD\n"
            + "VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNJADBGAiEAid0t/D3PdOPAefcjgelR\n"
            + "zLsAI8zyi4/Ssny5hzOg0JICIQDMxRTCtUX9NLjRDVLYy2NremFKL45G/MYMqjb8\n"
            + "flQw5w==\n"
            + "-----END CERTIFICATE-----\n";
    static final String EC_PIN = "sha256/npNGtuwyrwzZPA5EOdsoZumJEz1bWaH4MwJ50pBjLJc=";

    static final String RSA_CERT = "-----BEGIN CERTIFICATE-----\n"
            + "MIIDEzCCAfugAwIBAgIUDh1Z6CuqdbLfavi2dz/pTKjtmA8wDQYJKoZIhvcNAQEL\n"
            + "BQAwGTEXMBUGA1UEAwwOcGluIHZlY3RvciByc2EwHhcNMjYxMTMwMDk0ODM5WhcN\n"
            + "MzYxMTI3MDk0ODM5WjAZMRcwFQYDVQQDDA5waW4gdmVjdG9yIHJzYTCCASIwDQYJ\n"
            + "KoZIhvcNAQEBBQADggEPADCCAQoCggEBAOlcr0ZbP9S2bBzB9Fljan2Yhl2TAN8n\n"
            + "EJiYrNr8/NQ5upT5YZZ+lGLImyIXilVUpNbRS8d5Qh77cPjiBLvwqizxFcxy6jOM\n"
            + "vRFNC2omh6WGvGK8cETJ7rs3B2+s9zFAlunry7C9K2Vu5soPwunfdBpzQ4MdyiAJ\n"
            + "+xgiQPr506tIfYjlMuNVs3T575vXVlt+6fksRwrJ9wfmADCxJTvo1daChBYvhsjh\n"
            + "qQuVDJ4yZARou1cAV6YDb74A2DBgvVGYEzZdw6KXneIRJ3BUO7FxVEcCkGT00C9N\n"
            + "tIUHPG8uv8kH9LQlpSI5o/1zKOxRKVQ9CFCINa0p/O6rKnLUs7z1ynkCAwEAAaNT\n"
            + "MFEwHQYDVR0OBBYEFP9lrgfPn5GJZMq/osIpPpNnI+cDMB8GA1UdIwQYMBaAFP9l\n"
            + "rgfPn5GJZMq/osIpPpNnI+cDMA8GA1UdEwEB/wQFMAMBAf8wDQYJKoZIhvcNAQEL\n"
            + "BQADggEBAKv8UGk5vBYDaq+1dSkqyKPcwWK/OPGCPDU8Tyi60t+gkP3gjZWOR1FS\n"
            + "zV5Ss+Y9XgKShi/V9Yp2KmBLr9B08PsqgRzfexTHg5+p55ZF+H6Bp2XaAYcWe+aX\n"
            + "Xu71i+D2j1lvnjWU1ET6btmjPcQIAZPxSyaePxDBB4wyfWD604OwyK02+IKAVn3i\n"
            + "I1DArVTztSmrEKAbZ3b441MLlEvcXHw1XIqDFmFnsfMA6syLwgtgJWfF5nDHSK6h\n"
            + "Wg1a6kzNlm2jRm946zf5E5YNNW4t874yYFJ1iP7roFWaHrqzL86K70jBhFYEnzyt\n"
            + "WhdBxnVf8GggL8s4/r4oRo0wxYegPwk=\n"
            + "-----END CERTIFICATE-----\n";
    static final String RSA_PIN = "sha256/f3kov9WbjTcnhf7FuBMN/nR+qB0EZAbQUTVEg7Pj6Lw=";

    @Test
    void matchesOpensslForFixedCertificates() throws Exception {
        assertThat(SpkiPin.of(parse(EC_CERT))).isEqualTo(EC_PIN);
        assertThat(SpkiPin.of(parse(RSA_CERT))).isEqualTo(RSA_PIN);
    }

    @Test
    void matchesADigestOfTheJdkPublicKeyEncoding(@TempDir Path dir) throws Exception {
        X509Certificate ca = LocalCa.create(dir).certificate();
        X509Certificate leaf = new LeafIssuer(LocalCa.load(dir)).issue("x.example")[0];
        for (X509Certificate c : new X509Certificate[] {ca, leaf, parse(EC_CERT), parse(RSA_CERT)}) {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(c.getPublicKey().getEncoded());
            assertThat(SpkiPin.of(c)).isEqualTo("sha256/" + Base64.getEncoder().encodeToString(digest));
        }
        assertThat(SpkiPin.of(ca)).isNotEqualTo(SpkiPin.of(leaf));
    }

    @Test
    void parseAcceptsAWellFormedPin() {
        assertThat(SpkiPin.parse(EC_PIN)).isEqualTo(EC_PIN);
        assertThat(SpkiPin.parse(RSA_PIN)).isEqualTo(RSA_PIN);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "",
        "npNGtuwyrwzZPA5EOdsoZumJEz1bWaH4MwJ50pBjLJc=",            // no prefix
        "sha1/npNGtuwyrwzZPA5EOdsoZumJEz1bWaH4MwJ50pBjLJc=",       // other hash
        "SHA256/npNGtuwyrwzZPA5EOdsoZumJEz1bWaH4MwJ50pBjLJc=",     // prefix case
        "sha256/npNGtuwyrwzZPA5EOdsoZumJEz1bWaH4MwJ50pBjLJc",      // 43 chars
        "sha256/npNGtuwyrwzZPA5EOdsoZumJEz1bWaH4MwJ50pBjLJc==",    // 45 chars
        "sha256/npNGtuwyrwzZPA5EOdsoZumJEz1bWaH4MwJ50pBjLJ-=",     // base64url
        "sha256/npNGtuwyrwzZPA5EOdsoZumJEz1bWaH4MwJ50pB LJc=",     // space
        "sha256/npNGtuwyrwzZPA5EOdsoZumJEz1bWaH4MwJ50pBjLJd=",     // nonzero padding bits
        "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" + "A", // too long
        "sha256/BASE64SPKI="                                          // the design card's placeholder
    })
    void parseRejectsMalformedPins(String pin) {
        assertThatThrownBy(() -> SpkiPin.parse(pin))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("expected: sha256/ followed by 44 base64 characters");
    }

    static X509Certificate parse(String pem) throws Exception {
        return (X509Certificate) CertificateFactory.getInstance("X.509")
                .generateCertificate(new ByteArrayInputStream(pem.getBytes(StandardCharsets.US_ASCII)));
    }
}
