/**
 * LLM provider response parsing (token usage) as pure functions over bytes.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.rules.llm;

import org.jspecify.annotations.NullMarked;
