"""The audit log, below the domain: its catalogue of actions, its chains, and the changes it announces."""
