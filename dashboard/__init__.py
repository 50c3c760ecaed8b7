"""The end user's dashboard: what the agent remembers, with full control."""
