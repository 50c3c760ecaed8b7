"""French dates: « 3 déc. 2026 », « 3 déc. 2026, 18:07 » (the month's French abbreviation, lower
case; Django's "M" would capitalise it)."""

DATE_FORMAT = "j N Y"
DATETIME_FORMAT = "j N Y, H:i"
# Ours (dashboard/templatetags/memory_words.py): the admin tables' exact times, with the zone.
EXACT_DATETIME_FORMAT = "j N Y, H:i:s e"
ZONED_DATETIME_FORMAT = "j N Y, H:i e"
