"""Who is calling: bearer tokens and JWTs on HTTP, and the one identity every limit and audit line keys on."""
