package dev.sluice.proxy.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import io.netty.channel.epoll.Epoll;
import java.net.BindException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Clock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A listener that cannot be bound stops the start with one line naming the policy key, the address and a hint. */
class ListenerBindTest {

    @TempDir
    Path dir;

    private void start(String listen) throws Exception {
        Policy policy = PolicyLoader.parse("version: 1\nextensions:\n  default:\n    allow: []\nlisten:\n" + listen,
                "bind.yaml");
        try (AuditLog log = AuditLog.open(dir.resolve("audit.jsonl"))) {
            SluiceServer.start(policy, null, dir, log, Clock.systemUTC(), 1).close();
        }
    }

    @Test
    void aPortInUseNamesTheListenerAndAnotherProcess() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            int port = taken.getLocalPort();
            assertThatThrownBy(() -> start("  proxy: 127.0.0.1:" + port + "\n  admin: 127.0.0.1:0\n"))
                    .isInstanceOf(BindException.class)
                    .hasMessage("listen.proxy 127.0.0.1:" + port + ": address already in use \u2014 another process "
                            + "listens there (another Sluice?); stop it or change listen.proxy");
            assertThatThrownBy(() -> start("  proxy: 127.0.0.1:0\n  admin: 127.0.0.1:" + port + "\n"))
                    .hasMessageStartingWith("listen.admin 127.0.0.1:" + port + ": address already in use");
        }
    }

    @Test
    void anAddressNoInterfaceHasNamesTheListener() {
        // 198.51.100.254 (TEST-NET-2, RFC 5737) is on no interface here; nothing is sent anywhere.
        assertThatThrownBy(() -> start("  proxy: 127.0.0.1:0\n  admin: 198.51.100.254:0\n"))
                .isInstanceOf(BindException.class)
                .hasMessage("listen.admin 198.51.100.254:0: cannot assign requested address \u2014 no local interface has "
                        + "this address");
    }

    @Test
    void aTransparentListenerWithoutItsNamespaceSaysToCreateIt() {
        assumeTrue(Epoll.isAvailable(), "transparent mode needs the epoll transport");
        assertThatThrownBy(() -> start("  proxy: 127.0.0.1:0\n  admin: 127.0.0.1:0\n  transparent: 198.51.100.254:15001\n"))
                .isInstanceOf(BindException.class)
                .hasMessage("listen.transparent 198.51.100.254:15001: cannot assign requested address \u2014 create the "
                        + "namespace first (docker/sandbox-netns.sh up)");
    }

    @Test
    void theDescriptionDropsNettysSyscallPrefix() {
        BindException e = SluiceServer.bindFailure("listen.dns", new java.net.InetSocketAddress("10.220.5.1", 53),
                new java.io.IOException("bind(..) failed: Permission denied"));
        assertThat(e).hasMessage("listen.dns 10.220.5.1:53: permission denied \u2014 ports below 1024 need "
                + "CAP_NET_BIND_SERVICE; choose a port above 1023");
    }
}
