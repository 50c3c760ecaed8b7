"""Make the access audit append-only at the database level: UPDATE and DELETE are refused."""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION memoryhub_audit_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'memoryhub_auditentry is append-only: % is refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER memoryhub_audit_append_only
    BEFORE UPDATE OR DELETE ON memoryhub_auditentry
    FOR EACH ROW EXECUTE FUNCTION memoryhub_audit_refuse_change();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS memoryhub_audit_append_only ON memoryhub_auditentry;
DROP FUNCTION IF EXISTS memoryhub_audit_refuse_change();
"""


class Migration(migrations.Migration):
    dependencies = [("memoryhub", "0001_initial")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
