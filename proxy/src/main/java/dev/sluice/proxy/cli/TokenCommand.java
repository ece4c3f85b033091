package dev.sluice.proxy.cli;

import dev.sluice.rules.policy.Extension;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HexFormat;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code sluice token new NAME}: prints a fresh random token (32 bytes from {@link SecureRandom},
 * base64url without padding) once, with the {@code token_sha256} line to paste into the policy. A
 * {@code NAME} that is not a valid extension name ({@link Extension#NAME_PATTERN}) is a usage error (exit 2).
 */
@Command(name = "token", description = "Manage extension tokens.", subcommands = TokenCommand.New.class)
final class TokenCommand {

    @Command(name = "new", description = "Print a new token for an extension, and its token_sha256.")
    static final class New extends CliCommand implements Callable<Integer> {

        @Parameters(index = "0", paramLabel = "NAME", description = "The extension's name.")
        String name;

        @Override
        public Integer call() throws NoSuchAlgorithmException {
            if (!Extension.isValidName(name)) {
                throw usage("NAME: \"" + name + "\" is not a valid extension name (expected: " + Extension.NAME_PATTERN + ")");
            }
            byte[] raw = new byte[32];
            new SecureRandom().nextBytes(raw);
            String token = Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
            String sha = HexFormat.of().formatHex(
                    MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
            out().println("# token for extension \"" + name + "\" (shown once; Sluice stores only its hash)");
            out().println("token: " + token);
            out().println("# policy: extensions." + name + ".auth");
            out().println("auth: { token_sha256: \"" + sha + "\" }");
            out().println("# proxy URL: http://" + name + ":" + token + "@127.0.0.1:3128");
            return 0;
        }
    }
}
