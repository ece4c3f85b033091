package dev.sluice.proxy.testing;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import java.util.ArrayList;
import java.util.List;

/**
 * A logback appender (see logback-test.xml) that keeps every report Netty's {@code ResourceLeakDetector}
 * logs — a buffer or other reference-counted object collected without being released. The suite runs
 * with {@code -Dio.netty.leakDetection.level=paranoid}; {@link LeakCheckExtension} fails the test class
 * during or after which a report appears.
 */
public final class LeakReports extends AppenderBase<ILoggingEvent> {

    private static final List<String> REPORTS = new ArrayList<>();

    @Override
    protected void append(ILoggingEvent event) {
        synchronized (REPORTS) {
            REPORTS.add(event.getFormattedMessage());
        }
    }

    /** Returns and forgets the reports logged so far. */
    public static List<String> drain() {
        synchronized (REPORTS) {
            List<String> out = new ArrayList<>(REPORTS);
            REPORTS.clear();
            return out;
        }
    }
}
