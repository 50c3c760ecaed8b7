"""Staff-only pages: memory health and the access audit (issue 8)."""
