"""Count the agent journal's ciphertext in each user's stored bytes (see 0027_quotas)."""

from django.db import migrations

BYTES = "octet_length({t}.summary_ciphertext) + coalesce(octet_length({t}.key_ciphertext), 0)"
JOURNAL_TRIGGERS = f"""
CREATE FUNCTION memoryhub_usage_after_journal_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memoryhub_memoryusage AS u (user_id, memory_count, stored_bytes)
    SELECT user_id, 0, sum({BYTES.format(t="new_rows")}) FROM new_rows GROUP BY user_id
    ON CONFLICT (user_id) DO UPDATE SET stored_bytes = u.stored_bytes + EXCLUDED.stored_bytes;
    RETURN NULL;
END $$;
CREATE TRIGGER journal_usage_insert AFTER INSERT ON memoryhub_journalentry
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION memoryhub_usage_after_journal_insert();

CREATE FUNCTION memoryhub_usage_after_journal_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memoryhub_memoryusage AS u SET stored_bytes = u.stored_bytes - d.bytes
    FROM (
        SELECT user_id, sum({BYTES.format(t="old_rows")}) AS bytes FROM old_rows GROUP BY user_id
    ) AS d
    WHERE u.user_id = d.user_id;
    RETURN NULL;
END $$;
CREATE TRIGGER journal_usage_delete AFTER DELETE ON memoryhub_journalentry
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION memoryhub_usage_after_journal_delete();

INSERT INTO memoryhub_memoryusage AS u (user_id, memory_count, stored_bytes)
SELECT j.user_id, 0, sum({BYTES.format(t="j")}) FROM memoryhub_journalentry AS j GROUP BY j.user_id
ON CONFLICT (user_id) DO UPDATE SET stored_bytes = u.stored_bytes + EXCLUDED.stored_bytes;
"""
DROP_JOURNAL_TRIGGERS = """
UPDATE memoryhub_memoryusage AS u SET stored_bytes = u.stored_bytes - d.bytes
FROM (
    SELECT user_id, sum(octet_length(summary_ciphertext)
        + coalesce(octet_length(key_ciphertext), 0)) AS bytes
    FROM memoryhub_journalentry GROUP BY user_id
) AS d
WHERE u.user_id = d.user_id;
DROP TRIGGER journal_usage_insert ON memoryhub_journalentry;
DROP TRIGGER journal_usage_delete ON memoryhub_journalentry;
DROP FUNCTION memoryhub_usage_after_journal_insert();
DROP FUNCTION memoryhub_usage_after_journal_delete();
"""


class Migration(migrations.Migration):
    dependencies = [("memoryhub", "0028_forget_tasks")]

    operations = [migrations.RunSQL(JOURNAL_TRIGGERS, DROP_JOURNAL_TRIGGERS)]
