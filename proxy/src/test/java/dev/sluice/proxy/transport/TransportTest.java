package dev.sluice.proxy.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.channel.epoll.Epoll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The transport choice: epoll by default where it loads, NIO when asked for, epoll whatever is asked
 * when a feature needs it, and a start refused for a transport that does not exist.
 */
class TransportTest {

    private String saved;

    @BeforeEach
    void save() {
        saved = System.getProperty("sluice.transport");
    }

    @AfterEach
    void restore() {
        if (saved == null) {
            System.clearProperty("sluice.transport");
        } else {
            System.setProperty("sluice.transport", saved);
        }
    }

    @Test
    void epollUnlessNioIsAskedFor() {
        assumeTrue(Epoll.isAvailable(), "no native epoll on this platform");
        System.setProperty("sluice.transport", "epoll");
        assertThat(Transport.detect(false).name()).isEqualTo("epoll");
        System.setProperty("sluice.transport", "NIO");
        assertThat(Transport.detect(false).name()).isEqualTo("nio");
        assertThat(Transport.detect(true).name()).as("the transparent listener needs epoll").isEqualTo("epoll");
    }

    @Test
    void theDefaultIsEpollWhereItLoads() {
        assumeTrue(System.getenv("SLUICE_TRANSPORT") == null, "SLUICE_TRANSPORT set in this environment");
        System.clearProperty("sluice.transport");
        assertThat(Transport.detect(false).name()).isEqualTo(Epoll.isAvailable() ? "epoll" : "nio");
    }

    @Test
    void anUnknownTransportRefusesToStart() {
        System.setProperty("sluice.transport", "io_uring");
        assertThatThrownBy(() -> Transport.detect(false)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("expected epoll or nio");
    }
}
