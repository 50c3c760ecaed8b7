"""The extraction benchmark: labelled conversations, and a runner that scores what gets stored."""
