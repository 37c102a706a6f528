"""The family's vocabulary: tool conventions, the error split, settings, untrusted content, budgets, patterns."""
