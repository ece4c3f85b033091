package dev.sluice.proxy.cli;

import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.audit.PrivateFiles;
import dev.sluice.proxy.server.PolicyReloader;
import dev.sluice.proxy.server.SluiceServer;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code sluice run}: loads the policy (Sluice never starts without one that loaded), opens the audit
 * log, binds the listeners and serves until SIGTERM or SIGINT, when it stops accepting, closes the
 * connections (each writes its audit record) and flushes and closes the audit log. With
 * {@code --policy FILE}, the file is watched and SIGHUP reloads it ({@link PolicyReloader}).
 */
@Command(name = "run", description = "Run the proxy.")
final class RunCommand implements Callable<Integer> {

    @Mixin
    CommonOptions common;

    @Option(names = "--shutdown-grace-seconds", paramLabel = "SECONDS", defaultValue = "30",
            description = "On SIGTERM, how long exchanges and tunnels in flight may finish. Default: ${DEFAULT-VALUE}.")
    long shutdownGraceSeconds;

    @Override
    public Integer call() throws Exception {
        Policy policy;
        try {
            policy = common.loadPolicy();
        } catch (PolicyException e) {
            System.err.println("sluice: the policy did not load; not starting:");
            e.errors().forEach(error -> System.err.println("  " + error));
            return 1;
        }
        // The data dir holds the CA key, the pin store and the audit log: rwx------ (docs/certs.md).
        PrivateFiles.directory(common.dataDir);
        Path auditPath = common.dataDir.resolve(policy.audit().path());
        AuditLog auditLog = AuditLog.open(auditPath, policy.audit().maxFileBytes(), policy.audit().keepFiles());
        SluiceServer server;
        try {
            server = SluiceServer.start(policy, common.policy, common.dataDir, auditLog, Clock.systemUTC(), 0);
        } catch (Exception e) {
            auditLog.close();
            System.err.println("sluice: cannot start: " + e.getMessage());
            return 1;
        }
        PolicyReloader reloader = server.reloader();
        if (reloader != null) {
            reloader.startWatching();
        }
        installHangupHandler(reloader);
        PolicyReloader watching = reloader;
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (watching != null) {
                watching.close();
            }
            System.err.println("sluice: shutting down (grace " + shutdownGraceSeconds + " s)");
            server.close(Duration.ofSeconds(shutdownGraceSeconds));
            auditLog.close();
            System.err.println("sluice: stopped; audit log " + auditPath + " flushed and closed");
            stopped.countDown();
        }, "sluice-shutdown"));
        System.err.println("sluice: explicit proxy on " + server.proxyAddress().getHostString() + ":"
                + server.proxyAddress().getPort() + " (" + server.transportName() + "), admin on "
                + server.adminAddress() + ", policy " + policy.source() + ", audit log " + auditPath);
        stopped.await();
        return 0;
    }

    /** SIGHUP reloads the policy file (RFC-less Unix convention); with the embedded policy it only logs. */
    @SuppressWarnings("sunapi")
    private static void installHangupHandler(PolicyReloader reloader) {
        try {
            sun.misc.Signal.handle(new sun.misc.Signal("HUP"), signal -> {
                if (reloader == null) {
                    System.err.println("sluice: SIGHUP: running the embedded policy; nothing to reload");
                } else {
                    reloader.reload();
                }
            });
        } catch (IllegalArgumentException e) {
            System.err.println("sluice: SIGHUP is not available here; the policy file is still watched");
        }
    }
}
