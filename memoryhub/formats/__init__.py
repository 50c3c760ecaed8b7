"""Date formats of each language, over Django's own (settings.FORMAT_MODULE_PATH).

Templates write `|date:"DATE_FORMAT"` or `|date:"DATETIME_FORMAT"`; each language says how.
"""
