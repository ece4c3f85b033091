package dev.sluice.proxy.tls;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.SslProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@code -Dsluice.tls.provider}: auto, openssl, jdk, and a clear error for anything else. */
class ProviderChoiceTest {

    @AfterEach
    void clear() {
        System.clearProperty(InterceptionTls.PROVIDER_PROPERTY);
    }

    @Test
    void autoIsBoringSslWhenItLoadsAndJdkOtherwise() {
        System.setProperty(InterceptionTls.PROVIDER_PROPERTY, "auto");
        assertThat(InterceptionTls.chooseProvider()).isEqualTo(OpenSsl.isAvailable() ? SslProvider.OPENSSL : SslProvider.JDK);
    }

    @Test
    void jdkAndOpensslAreTakenAsAsked() {
        System.setProperty(InterceptionTls.PROVIDER_PROPERTY, "JDK");
        assertThat(InterceptionTls.chooseProvider()).isEqualTo(SslProvider.JDK);
        System.setProperty(InterceptionTls.PROVIDER_PROPERTY, "openssl");
        if (OpenSsl.isAvailable()) {
            assertThat(InterceptionTls.chooseProvider()).isEqualTo(SslProvider.OPENSSL);
        } else {
            assertThatThrownBy(InterceptionTls::chooseProvider).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("did not load");
        }
    }

    @Test
    void anythingElseIsRefusedNamingTheChoices() {
        System.setProperty(InterceptionTls.PROVIDER_PROPERTY, "boringssl");
        assertThatThrownBy(InterceptionTls::chooseProvider).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("sluice.tls.provider: boringssl (expected: auto, openssl or jdk)");
    }
}
