package dev.sluice.proxy.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * deploy/kubernetes, validated against the Kubernetes API types (fabric8's kubernetes-model, generated
 * from the API's OpenAPI schema): every document parses into its typed class with no field left over
 * (an unknown or misspelt field anywhere fails), kustomizations and the ServiceMonitor parse into
 * records that reject unknown fields, and the pieces agree with each other and with Sluice (the embedded
 * policies load, Services select the pods, probes hit /readyz and /healthz on a declared port, every
 * container is non-root with a read-only root).
 */
class KubernetesManifestsTest {

    private static final Path ROOT = Path.of("..", "deploy", "kubernetes");
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final ObjectMapper STRICT = new ObjectMapper(new YAMLFactory())
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
    private static final tools.jackson.databind.ObjectMapper KUBE = tools.jackson.databind.json.JsonMapper.builder().build();
    private static final Map<String, Class<? extends HasMetadata>> TYPES = Map.of(
            "v1/Namespace", Namespace.class,
            "v1/Service", Service.class,
            "apps/v1/Deployment", Deployment.class,
            "apps/v1/DaemonSet", DaemonSet.class,
            "networking.k8s.io/v1/NetworkPolicy", NetworkPolicy.class,
            "policy/v1/PodDisruptionBudget", PodDisruptionBudget.class);

    // Kustomize's and the Prometheus Operator's types, as far as these files use them; unknown fields fail.
    record Kustomization(String apiVersion, String kind, String namespace, List<String> resources,
                         List<ConfigMapGenerator> configMapGenerator, List<Labels> labels) {
    }

    record ConfigMapGenerator(String name, List<String> files, GeneratorOptions options) {
    }

    record GeneratorOptions(boolean disableNameSuffixHash) {
    }

    record Labels(Map<String, String> pairs, Boolean includeSelectors) {
    }

    record ServiceMonitor(String apiVersion, String kind, Meta metadata, ServiceMonitorSpec spec) {
    }

    record Meta(String name, String namespace, Map<String, String> labels) {
    }

    record ServiceMonitorSpec(Selector selector, NamespaceSelector namespaceSelector, List<Endpoint> endpoints) {
    }

    record Selector(Map<String, String> matchLabels) {
    }

    record NamespaceSelector(List<String> matchNames, Boolean any) {
    }

    record Endpoint(String port, String path, String interval, String scrapeTimeout, String scheme,
                    @JsonProperty("honorLabels") Boolean honorLabels) {
    }

    /** Every Kubernetes document in every .yaml file (kustomizations, policies and the ServiceMonitor aside). */
    private static List<HasMetadata> resources(Path dir) throws Exception {
        List<HasMetadata> all = new ArrayList<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".yaml")).sorted().toList()) {
                String name = f.getFileName().toString();
                if (name.equals("kustomization.yaml") || name.equals("policy.yaml")) {
                    continue;
                }
                for (JsonNode doc : YAML.readValues(YAML.createParser(f.toFile()), JsonNode.class).readAll()) {
                    if (doc == null || doc.isNull()) {
                        continue;
                    }
                    String type = doc.path("apiVersion").asText() + "/" + doc.path("kind").asText();
                    Class<? extends HasMetadata> cls = TYPES.get(type);
                    assertThat(cls).as(f + ": a known Kubernetes type, not " + type).isNotNull();
                    HasMetadata r = KUBE.readValue(JSON.writeValueAsString(doc), cls);
                    assertThat(leftovers(r, "")).as(f + ": fields that are not in the " + type + " schema").isEmpty();
                    all.add(r);
                }
            }
        }
        return all;
    }

    /** Paths of every {@code additionalProperties} entry in the object graph (fabric8 keeps unknown fields there). */
    private static List<String> leftovers(Object root, String path) throws Exception {
        List<String> found = new ArrayList<>();
        walk(root, path, found, new IdentityHashMap<>());
        return found;
    }

    private static void walk(Object o, String path, List<String> found, IdentityHashMap<Object, Boolean> seen)
            throws Exception {
        if (o == null || seen.put(o, Boolean.TRUE) != null) {
            return;
        }
        if (o instanceof Collection<?> c) {
            int i = 0;
            for (Object e : c) {
                walk(e, path + "[" + i++ + "]", found, seen);
            }
            return;
        }
        if (o instanceof Map<?, ?> m) {
            for (Map.Entry<?, ?> e : m.entrySet()) {
                walk(e.getValue(), path + "." + e.getKey(), found, seen);
            }
            return;
        }
        if (!o.getClass().getName().startsWith("io.fabric8.")) {
            return;
        }
        for (Method m : o.getClass().getMethods()) {
            if (m.getParameterCount() != 0 || Modifier.isStatic(m.getModifiers()) || !m.getName().startsWith("get")
                    || m.getDeclaringClass() == Object.class) {
                continue;
            }
            Object value = m.invoke(o);
            if (m.getName().equals("getAdditionalProperties")) {
                if (value instanceof Map<?, ?> extra && !extra.isEmpty()) {
                    extra.keySet().forEach(k -> found.add(path + "." + k));
                }
                continue;
            }
            String field = Character.toLowerCase(m.getName().charAt(3)) + m.getName().substring(4);
            walk(value, path + "." + field, found, seen);
        }
    }

    private static Kustomization kustomization(Path dir) throws Exception {
        Kustomization k = STRICT.readValue(dir.resolve("kustomization.yaml").toFile(), Kustomization.class);
        assertThat(k.apiVersion()).isEqualTo("kustomize.config.k8s.io/v1beta1");
        assertThat(k.kind()).isEqualTo("Kustomization");
        for (String r : k.resources()) {
            assertThat(r).as("kustomize loads files only from inside the kustomization").doesNotStartWith("..");
            assertThat(dir.resolve(r)).as(dir + ": resource " + r).isRegularFile();
        }
        try (Stream<Path> files = Files.list(dir)) {
            List<String> listed = new ArrayList<>(k.resources());
            k.configMapGenerator().forEach(g -> listed.addAll(g.files()));
            listed.add("kustomization.yaml");
            assertThat(files.map(p -> p.getFileName().toString())).as(dir + ": every file is used")
                    .allMatch(listed::contains);
        }
        return k;
    }

    private static <T extends HasMetadata> List<T> of(List<HasMetadata> all, Class<T> type) {
        return all.stream().filter(type::isInstance).map(type::cast).toList();
    }

    private static void checkPod(String what, PodSpec pod, Map<String, String> labels) throws Exception {
        assertThat(pod.getAutomountServiceAccountToken()).as(what + ": no service account token").isFalse();
        List<Container> all = new ArrayList<>(pod.getInitContainers());
        all.addAll(pod.getContainers());
        for (Container c : all) {
            assertThat(c.getSecurityContext().getReadOnlyRootFilesystem()).as(what + "/" + c.getName() + ": read-only root").isTrue();
            assertThat(c.getSecurityContext().getAllowPrivilegeEscalation()).as(what + "/" + c.getName()).isFalse();
            assertThat(c.getSecurityContext().getCapabilities().getDrop()).as(what + "/" + c.getName()).contains("ALL");
            assertThat(c.getResources().getRequests()).as(what + "/" + c.getName() + ": resource requests")
                    .containsKeys("cpu", "memory");
        }
        Container sluice = pod.getContainers().stream().filter(c -> c.getName().equals("sluice")).findFirst().orElseThrow();
        Long uid = sluice.getSecurityContext().getRunAsUser() != null ? sluice.getSecurityContext().getRunAsUser()
                : pod.getSecurityContext().getRunAsUser();
        assertThat(uid).as(what + ": Sluice runs as uid 10001").isEqualTo(10001L);
        assertThat(sluice.getSecurityContext().getCapabilities().getAdd()).as(what + ": Sluice has no capabilities").isNullOrEmpty();
        assertThat(sluice.getReadinessProbe().getHttpGet().getPath()).isEqualTo("/readyz");
        assertThat(sluice.getLivenessProbe().getHttpGet().getPath()).isEqualTo("/healthz");
        Set<String> portNames = new java.util.HashSet<>();
        Set<Integer> portNumbers = new java.util.HashSet<>();
        for (ContainerPort p : sluice.getPorts()) {
            assertThat(p.getProtocol()).as(what + ": every port names its protocol").isIn("TCP", "UDP");
            if (p.getName() != null) {
                portNames.add(p.getName());
            }
            portNumbers.add(p.getContainerPort());
        }
        for (var probe : List.of(sluice.getReadinessProbe(), sluice.getLivenessProbe())) {
            var port = probe.getHttpGet().getPort();
            assertThat(port.getStrVal() != null ? portNames.contains(port.getStrVal()) : portNumbers.contains(port.getIntVal()))
                    .as(what + ": probe port " + port + " is declared").isTrue();
        }
        // The policy is the ConfigMap's policy.yaml, mounted where --policy points.
        List<String> args = sluice.getArgs();
        String policyPath = args.get(args.indexOf("--policy") + 1);
        var mount = sluice.getVolumeMounts().stream().filter(m -> policyPath.startsWith(m.getMountPath() + "/"))
                .findFirst().orElseThrow();
        Volume volume = pod.getVolumes().stream().filter(v -> v.getName().equals(mount.getName())).findFirst().orElseThrow();
        assertThat(volume.getConfigMap()).as(what + ": the policy comes from a ConfigMap").isNotNull();
        assertThat(policyPath).endsWith("/policy.yaml");
        assertThat(labels).isNotEmpty();
    }

    @Test
    void baseDeploymentServiceAndNetworkPolicyMatchTheApiAndEachOther() throws Exception {
        Path base = ROOT.resolve("base");
        Kustomization k = kustomization(base);
        List<HasMetadata> all = resources(base);
        Deployment deployment = of(all, Deployment.class).get(0);
        Map<String, String> podLabels = deployment.getSpec().getTemplate().getMetadata().getLabels();
        assertThat(deployment.getSpec().getReplicas()).isGreaterThan(1);
        assertThat(deployment.getSpec().getTemplate().getSpec().getSecurityContext().getRunAsNonRoot()).isTrue();
        checkPod("Deployment", deployment.getSpec().getTemplate().getSpec(), podLabels);
        assertThat(podLabels).containsAllEntriesOf(deployment.getSpec().getSelector().getMatchLabels());
        assertThat(k.configMapGenerator()).extracting(ConfigMapGenerator::name).contains(
                deployment.getSpec().getTemplate().getSpec().getVolumes().stream()
                        .filter(v -> v.getConfigMap() != null).findFirst().orElseThrow().getConfigMap().getName());
        assertThat(deployment.getSpec().getTemplate().getSpec().getVolumes()).anyMatch(v -> v.getSecret() != null
                && v.getSecret().getSecretName().equals("sluice-ca"));

        List<Service> services = of(all, Service.class);
        assertThat(services).extracting(s -> s.getMetadata().getName()).containsExactlyInAnyOrder("sluice", "sluice-admin");
        for (Service s : services) {
            assertThat(podLabels).as(s.getMetadata().getName() + " selects the pods").containsAllEntriesOf(s.getSpec().getSelector());
        }
        Service proxy = services.stream().filter(s -> s.getMetadata().getName().equals("sluice")).findFirst().orElseThrow();
        assertThat(proxy.getSpec().getPorts()).extracting(p -> p.getPort()).as("admin is not on the sandbox's Service")
                .containsExactly(3128);

        // The ServiceMonitor selects the admin Service (with the labels kustomize adds).
        ServiceMonitor monitor = STRICT.readValue(ROOT.resolve("monitoring/servicemonitor.yaml").toFile(), ServiceMonitor.class);
        assertThat(monitor.apiVersion()).isEqualTo("monitoring.coreos.com/v1");
        Service admin = services.stream().filter(s -> s.getMetadata().getName().equals("sluice-admin")).findFirst().orElseThrow();
        Map<String, String> adminLabels = new LinkedHashMap<>(admin.getMetadata().getLabels());
        k.labels().forEach(l -> adminLabels.putAll(l.pairs()));
        assertThat(adminLabels).containsAllEntriesOf(monitor.spec().selector().matchLabels());
        assertThat(monitor.spec().endpoints()).extracting(Endpoint::port)
                .allMatch(p -> admin.getSpec().getPorts().stream().anyMatch(sp -> p.equals(sp.getName())));
        assertThat(monitor.spec().endpoints()).extracting(Endpoint::path).containsOnly("/metrics");

        NetworkPolicy sluiceIngress = of(all, NetworkPolicy.class).get(0);
        assertThat(podLabels).containsAllEntriesOf(sluiceIngress.getSpec().getPodSelector().getMatchLabels());

        Policy policy = PolicyLoader.load(base.resolve("policy.yaml"));
        assertThat(policy.listen().proxy().getPort()).isEqualTo(3128);
        assertThat(policy.listen().admin().getPort()).isEqualTo(9901);
        assertThat(policy.audit().stdout()).isTrue();
    }

    @Test
    void sandboxNetworkPoliciesLetSandboxPodsReachOnlySluice() throws Exception {
        List<HasMetadata> all = resources(ROOT.resolve("sandbox"));
        List<NetworkPolicy> policies = of(all, NetworkPolicy.class);
        assertThat(policies).hasSize(2);
        for (NetworkPolicy np : policies) {
            assertThat(np.getSpec().getPolicyTypes()).containsExactly("Egress");
            assertThat(np.getSpec().getPodSelector().getMatchLabels()).containsEntry("sluice.dev/sandbox", "true");
            assertThat(np.getSpec().getEgress()).allSatisfy(rule -> assertThat(rule.getTo()).isNotEmpty());
        }
        NetworkPolicy explicit = policies.stream().filter(p -> p.getMetadata().getName().equals("sandbox-egress"))
                .findFirst().orElseThrow();
        assertThat(explicit.getSpec().getEgress().get(0).getTo().get(0).getPodSelector().getMatchLabels())
                .containsEntry("app.kubernetes.io/name", "sluice");
        NetworkPolicy transparent = policies.stream().filter(p -> p != explicit).findFirst().orElseThrow();
        assertThat(transparent.getSpec().getEgress()).hasSize(1);
        assertThat(transparent.getSpec().getEgress().get(0).getTo().get(0).getIpBlock().getCidr()).isEqualTo("169.254.20.11/32");
    }

    @Test
    void transparentDaemonSetMatchesItsPolicy() throws Exception {
        Path dir = ROOT.resolve("transparent-daemonset");
        kustomization(dir);
        List<HasMetadata> all = resources(dir);
        DaemonSet ds = of(all, DaemonSet.class).get(0);
        PodSpec pod = ds.getSpec().getTemplate().getSpec();
        assertThat(pod.getHostNetwork()).isTrue();
        checkPod("DaemonSet", pod, ds.getSpec().getTemplate().getMetadata().getLabels());
        Policy policy = PolicyLoader.load(dir.resolve("policy.yaml"));
        assertThat(policy.listen().transparent().getAddress().getHostAddress()).isEqualTo("169.254.20.11");
        String init = String.join("\n", pod.getInitContainers().get(0).getCommand());
        assertThat(init).contains("169.254.20.11:" + policy.listen().transparent().getPort())
                .contains("169.254.20.11:" + policy.listen().dns().getPort());
        String sources = policy.extension("github").orElseThrow().sources().get(0).toString();
        assertThat(init).contains("-s " + sources);
        assertThat(of(all, Namespace.class).get(0).getMetadata().getLabels())
                .containsEntry("pod-security.kubernetes.io/enforce", "privileged");
    }

    @Test
    void aMisspeltFieldFailsTheValidation() throws Exception {
        String bad = Files.readString(ROOT.resolve("base/deployment.yaml")).replace("readOnlyRootFilesystem", "readOnlyRootFileSystem");
        Path tmp = Files.createTempDirectory("k8s-bad");
        try {
            Files.writeString(tmp.resolve("deployment.yaml"), bad);
            JsonNode doc = YAML.readValues(YAML.createParser(tmp.resolve("deployment.yaml").toFile()), JsonNode.class).next();
            Deployment d = KUBE.readValue(JSON.writeValueAsString(doc), Deployment.class);
            assertThat(leftovers(d, "")).isNotEmpty()
                    .allMatch(p -> p.endsWith("securityContext.readOnlyRootFileSystem"));
        } finally {
            try (Stream<Path> files = Files.list(tmp)) {
                for (Path f : files.toList()) {
                    Files.delete(f);
                }
            }
            Files.delete(tmp);
        }
    }
}
