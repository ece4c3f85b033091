package dev.sluice.rules.policy;

import java.util.List;
import java.util.stream.Collectors;

/** Thrown when a policy cannot load; carries every error found, each with file:line:column. */
public final class PolicyException extends Exception {
    private static final long serialVersionUID = 1L;

    private final transient List<PolicyError> errors;

    public PolicyException(List<PolicyError> errors) {
        super(errors.stream().map(PolicyError::toString).collect(Collectors.joining("\n")));
        this.errors = List.copyOf(errors);
    }

    public List<PolicyError> errors() {
        return errors;
    }
}
