package dev.sluice.proxy.credential;

/** A credential's source could not be read and the credential is not {@code optional}: the policy does not load. */
public final class CredentialLoadException extends Exception {

    private final String credential;

    CredentialLoadException(String credential, String message) {
        super("credentials." + credential + ".source: " + message);
        this.credential = credential;
    }

    /** Returns the credential's name. */
    public String credential() {
        return credential;
    }
}
