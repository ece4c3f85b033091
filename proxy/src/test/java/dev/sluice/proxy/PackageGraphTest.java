package dev.sluice.proxy;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.Set;
import java.util.TreeSet;
import org.jspecify.annotations.NullMarked;
import org.junit.jupiter.api.Test;

/**
 * The package graph reads as the flow of a connection (docs/architecture.md, "Packages"): composition
 * root ({@code cli}, {@code server}) → listeners ({@code explicit}, {@code transparent}, {@code dns},
 * {@code admin}) → phases ({@code tunnel} → {@code intercept} → {@code request}, {@code forward}) →
 * shared leaves ({@code http}, {@code exchange}, {@code core}, {@code dial}, {@code tls}, {@code audit},
 * {@code metrics}, {@code limits}, {@code transport}, {@code approval}, {@code alerts}) → the {@code rules}, {@code certs} and {@code hosts}
 * modules. A new import cycle (between proxy packages, between the packages of {@code rules} or of
 * {@code certs}, or between modules), an arrow pointing up the graph, a Netty import in {@code rules}, or a
 * package without {@code @NullMarked} fails the build.
 */
class PackageGraphTest {

    private static final JavaClasses SLUICE = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.sluice");

    @Test
    void proxyPackagesHaveNoCycles() {
        slices().matching("dev.sluice.proxy.(*)..").should().beFreeOfCycles().check(SLUICE);
    }

    @Test
    void everyPackageIsNullMarked() {
        Set<String> unmarked = new TreeSet<>();
        for (JavaClass c : SLUICE) {
            if (!c.getPackage().isAnnotatedWith(NullMarked.class)) {
                unmarked.add(c.getPackageName());
            }
        }
        assertThat(unmarked).as("packages without a @NullMarked package-info.java").isEmpty();
    }

    @Test
    void rulesPackagesHaveNoCycles() {
        slices().matching("dev.sluice.rules.(*)..").should().beFreeOfCycles().check(SLUICE);
    }

    @Test
    void certsPackagesHaveNoCycles() {
        slices().matching("dev.sluice.certs.(*)..").should().beFreeOfCycles().check(SLUICE);
    }

    @Test
    void modulesHaveNoCycles() {
        slices().matching("dev.sluice.(*)..").should().beFreeOfCycles().check(SLUICE);
    }

    @Test
    void rulesImportsNothingFromNettyNorFromTheProxy() {
        noClasses().that().resideInAPackage("dev.sluice.rules..")
                .should().dependOnClassesThat().resideInAnyPackage("io.netty..", "dev.sluice.proxy..",
                        "dev.sluice.certs..")
                .check(SLUICE);
    }

    @Test
    void certsAndHostsDependOnNoOtherSluiceModule() {
        noClasses().that().resideInAPackage("dev.sluice.certs..")
                .should().dependOnClassesThat().resideInAnyPackage("dev.sluice.rules..", "dev.sluice.proxy..")
                .check(SLUICE);
        noClasses().that().resideInAPackage("dev.sluice.hosts..")
                .should().dependOnClassesThat().resideInAnyPackage("dev.sluice.rules..", "dev.sluice.proxy..",
                        "dev.sluice.certs..")
                .check(SLUICE);
    }

    @Test
    void theProxyIsLayeredAsTheFlowOfAConnection() {
        layeredArchitecture().consideringOnlyDependenciesInAnyPackage("dev.sluice..")
                .layer("root").definedBy("dev.sluice.proxy.cli..", "dev.sluice.proxy.server..")
                .layer("listeners").definedBy("dev.sluice.proxy.explicit..", "dev.sluice.proxy.transparent..",
                        "dev.sluice.proxy.dns..", "dev.sluice.proxy.admin..")
                .layer("phases").definedBy("dev.sluice.proxy.tunnel..", "dev.sluice.proxy.intercept..",
                        "dev.sluice.proxy.request..", "dev.sluice.proxy.forward..")
                .layer("leaves").definedBy("dev.sluice.proxy.http..", "dev.sluice.proxy.exchange..",
                        "dev.sluice.proxy.core..", "dev.sluice.proxy.dial..", "dev.sluice.proxy.tls..",
                        "dev.sluice.proxy.audit..", "dev.sluice.proxy.metrics..", "dev.sluice.proxy.limits..",
                        "dev.sluice.proxy.transport..", "dev.sluice.proxy.approval..", "dev.sluice.proxy.credential..",
                        "dev.sluice.proxy.alerts..", "dev.sluice.proxy.capture..")
                .layer("modules").definedBy("dev.sluice.rules..", "dev.sluice.certs..", "dev.sluice.hosts..")
                .whereLayer("root").mayNotBeAccessedByAnyLayer()
                .whereLayer("listeners").mayOnlyBeAccessedByLayers("root")
                .whereLayer("phases").mayOnlyBeAccessedByLayers("root", "listeners")
                .whereLayer("leaves").mayOnlyBeAccessedByLayers("root", "listeners", "phases")
                .whereLayer("modules").mayOnlyBeAccessedByLayers("root", "listeners", "phases", "leaves")
                .check(SLUICE);
    }
}
