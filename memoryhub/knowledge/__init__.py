"""The knowledge domain: reported answers and their scoring, learning candidates, and the
workspace knowledge base (documents, chunks, search).

The review app (review/) is the reviewers' pages and queue on top of it.
"""
