package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import org.junit.jupiter.api.Test;

/** {@link AlpnOffer} on ClientHellos a real JDK TLS client produces, whole and cut short. */
class AlpnOfferTest {

    /** The ClientHello body (after the 5-byte record and 4-byte handshake headers) of a JDK client. */
    private static ByteBuf clientHelloBody(String... alpn) throws Exception {
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, null, null);
        SSLEngine engine = context.createSSLEngine("api.llm.test", 443);
        engine.setUseClientMode(true);
        if (alpn.length > 0) {
            SSLParameters params = engine.getSSLParameters();
            params.setApplicationProtocols(alpn);
            engine.setSSLParameters(params);
        }
        ByteBuffer out = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
        engine.wrap(ByteBuffer.allocate(0), out);
        out.flip();
        ByteBuf record = Unpooled.wrappedBuffer(out);
        assertThat(record.getUnsignedByte(0)).isEqualTo((short) 22);
        assertThat(record.getUnsignedByte(5)).isEqualTo((short) 1);
        int length = record.getUnsignedMedium(6);
        return record.slice(9, length);
    }

    @Test
    void readsTheOfferedProtocolsInTheClientsOrder() throws Exception {
        assertThat(AlpnOffer.offered(clientHelloBody("h2"))).contains(List.of("h2"));
        assertThat(AlpnOffer.offered(clientHelloBody("h2", "http/1.1"))).contains(List.of("h2", "http/1.1"));
    }

    @Test
    void aClientHelloWithoutAlpnOffersNothing() throws Exception {
        assertThat(AlpnOffer.offered(clientHelloBody())).isEmpty();
    }

    @Test
    void aClientHelloCutShortAnywhereIsLeftToTheHandshake() throws Exception {
        ByteBuf whole = clientHelloBody("h2");
        for (int length = 0; length < whole.readableBytes(); length++) {
            // Truncated anywhere: never an exception, never a partial list of names.
            assertThat(AlpnOffer.offered(whole.slice(0, length))).satisfiesAnyOf(
                    o -> assertThat(o).isEmpty(), o -> assertThat(o).contains(List.of("h2")));
        }
    }

    @Test
    void theAlertIsAFatalNoApplicationProtocolRecord() {
        ByteBuf alert = AlpnOffer.alert(ByteBufAllocator.DEFAULT);
        try {
            byte[] bytes = new byte[alert.readableBytes()];
            alert.getBytes(0, bytes);
            assertThat(bytes).containsExactly(21, 3, 3, 0, 2, 2, 120);
        } finally {
            alert.release();
        }
    }
}
