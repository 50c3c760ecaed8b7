"""English dates: "3 Dec 2026", "3 Dec 2026, 18:07" (the day first, as the pages always wrote)."""

DATE_FORMAT = "j M Y"
DATETIME_FORMAT = "j M Y, H:i"
