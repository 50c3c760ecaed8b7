"""English dates: "3 Dec 2026", "3 Dec 2026, 18:07" (the day first, as the pages always wrote)."""

DATE_FORMAT = "j M Y"
DATETIME_FORMAT = "j M Y, H:i"
# Ours (dashboard/templatetags/memory_words.py): the admin tables' exact times, with the zone.
EXACT_DATETIME_FORMAT = "j M Y, H:i:s e"
ZONED_DATETIME_FORMAT = "j M Y, H:i e"
