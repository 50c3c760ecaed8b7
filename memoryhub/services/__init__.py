"""State changes of the memory domain; every write goes through one of these modules."""
