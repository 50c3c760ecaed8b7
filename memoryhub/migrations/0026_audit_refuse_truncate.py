"""Refuse TRUNCATE of the access audit too: row triggers (migration 0002) never see it.

The test suite's flush empties every table with one TRUNCATE between transactional tests, so
the trigger lets it through where the session setting `memoryhub.audit_truncate_allowed` is
`on`: tests/conftest.py sets it on the throwaway test database only. Nothing else sets it.
"""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION memoryhub_audit_refuse_truncate() RETURNS trigger AS $$
BEGIN
    IF current_setting('memoryhub.audit_truncate_allowed', true) = 'on' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'memoryhub_auditentry is append-only: TRUNCATE is refused'
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER memoryhub_audit_no_truncate
    BEFORE TRUNCATE ON memoryhub_auditentry
    FOR EACH STATEMENT EXECUTE FUNCTION memoryhub_audit_refuse_truncate();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS memoryhub_audit_no_truncate ON memoryhub_auditentry;
DROP FUNCTION IF EXISTS memoryhub_audit_refuse_truncate();
"""


class Migration(migrations.Migration):
    dependencies = [("memoryhub", "0025_incognito_keeps_no_working_memory")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
