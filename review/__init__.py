"""The reviewers' queue, the knowledge base and the self-tuning threshold."""
