package dev.sluice.proxy.testing;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * Runs the real {@code curl} binary for integration tests, without a shell.
 *
 * <p>The command is {@code curl -q -sS -o <temp file> -w %{http_code} <args...>}: {@code -q} (first)
 * keeps {@code ~/.curlrc} out, the body goes to a temp file, and stdout carries only the status code,
 * so the two never mix. Pass one URL, and no {@code -o}, {@code -w} or {@code -s} of your own.
 * The child's environment has the proxy variables removed ({@link #PROXY_VARIABLES}); add your own
 * with {@link #run(List, Duration, Map)}.
 */
public final class Curl {

    /** Default time limit for one run. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

    /** Environment variables removed from the child's environment. */
    public static final List<String> PROXY_VARIABLES = List.of("http_proxy", "https_proxy", "HTTP_PROXY",
            "HTTPS_PROXY", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy");

    /**
     * What one curl run produced.
     *
     * @param exitCode curl's exit status (0 success; e.g. 7 could not connect, 35 TLS handshake failed,
     *     56 receive failure, 60 certificate not trusted)
     * @param httpStatus the final response's status code, or 0 when there was no response
     * @param body the response body as UTF-8 text (empty when there was none)
     * @param stderr curl's error output (with {@code -v}, the verbose trace)
     */
    public record CurlResult(int exitCode, int httpStatus, String body, String stderr) {
    }

    private Curl() {
    }

    /** Runs curl with {@code args} and {@link #DEFAULT_TIMEOUT}; see {@link #run(List, Duration, Map)}. */
    public static CurlResult run(List<String> args) {
        return run(args, DEFAULT_TIMEOUT, Map.of());
    }

    /** Runs curl with {@code args} and a time limit; see {@link #run(List, Duration, Map)}. */
    public static CurlResult run(List<String> args, Duration timeout) {
        return run(args, timeout, Map.of());
    }

    /**
     * Runs curl and waits for it.
     *
     * @param args curl arguments after the fixed ones, e.g. {@code ["--cacert", ca, "https://h/p"]}
     * @param timeout how long to wait before killing curl
     * @param env variables to set in the child after the proxy variables were removed, e.g.
     *     {@code HTTPS_PROXY} to test that curl honours it
     * @throws IllegalStateException if curl did not finish within {@code timeout} (it is killed) or the
     *     waiting thread was interrupted
     * @throws UncheckedIOException if curl cannot be started or its output cannot be read
     */
    public static CurlResult run(List<String> args, Duration timeout, Map<String, String> env) {
        Objects.requireNonNull(args, "args");
        Objects.requireNonNull(timeout, "timeout");
        Objects.requireNonNull(env, "env");
        Path body = null;
        Path out = null;
        Path err = null;
        try {
            body = Files.createTempFile("curl-body-", ".bin");
            out = Files.createTempFile("curl-out-", ".txt");
            err = Files.createTempFile("curl-err-", ".txt");
            List<String> command = new ArrayList<>(List.of("curl", "-q", "-sS", "-o", body.toString(),
                    "-w", "%{http_code}"));
            command.addAll(args);
            ProcessBuilder builder = new ProcessBuilder(command)
                    .redirectInput(ProcessBuilder.Redirect.from(nullDevice()))
                    .redirectOutput(out.toFile())
                    .redirectError(err.toFile());
            PROXY_VARIABLES.forEach(builder.environment()::remove);
            builder.environment().putAll(env);
            Process process = builder.start();
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly().waitFor();
                throw new IllegalStateException("curl did not finish within " + timeout + ": " + args
                        + "; stderr: " + Files.readString(err, StandardCharsets.UTF_8).strip());
            }
            return new CurlResult(process.exitValue(), parseStatus(Files.readString(out, StandardCharsets.UTF_8)),
                    Files.readString(body, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run curl " + args, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for curl " + args, e);
        } finally {
            deleteQuietly(body);
            deleteQuietly(out);
            deleteQuietly(err);
        }
    }

    private static int parseStatus(String writeOut) {
        String s = writeOut.strip();
        // %{http_code} is three digits per transfer; with several transfers take the last.
        if (s.length() > 3) {
            s = s.substring(s.length() - 3);
        }
        try {
            return s.isEmpty() ? 0 : Integer.parseInt(s);
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private static File nullDevice() {
        return new File(System.getProperty("os.name").startsWith("Windows") ? "NUL" : "/dev/null");
    }

    private static void deleteQuietly(Path p) {
        if (p != null) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException ignored) {
                // a temp file left behind is harmless
            }
        }
    }
}
