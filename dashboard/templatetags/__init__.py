"""Template filters of the dashboard."""
