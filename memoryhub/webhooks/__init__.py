"""Webhooks: a workspace's endpoints hear of changes, signed with the Standard Webhooks scheme.

`events.py` maps announced changes to event types, `services.py` records and sends the
deliveries, `signing.py` wraps the `standardwebhooks` package, `queries.py` reads endpoints and
the delivery log. `events.on_change` subscribes to `audit/changes.py` at start-up.
"""
