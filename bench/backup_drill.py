"""Backup and restore drill at size: how long `manage.py backup` and `restore` take.

Two throwaway PostgreSQL clusters of the embedded binaries on loopback: the first is migrated
and filled with N memories of one user (ciphertext, no embeddings: bench/export_memory.py's
populate), read once so the audit log has rows, then backed up; the second receives the
restore, which checks the keys, restores in one transaction and runs verify_restore (every
memory decrypted, the audit chain verified). Prints a table and writes
bench/results/backup-drill-<UTC time>.json. Bounded: both clusters are deleted at the end.

    python -m bench.backup_drill [--memories 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

from tests.pg_clusters import temporary_cluster

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "bench" / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=20_000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memoryhub-backup-drill-"))
    try:
        with temporary_cluster() as source, temporary_cluster() as target:
            report = drill(source.create_database("memoryhub"), target, args.memories, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, value in report.items():
        print(f"{name:28}{value}")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS_DIR / f"backup-drill-{stamp}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {path.relative_to(REPO)}")


def drill(source_url: str, target: object, memories: int, work: Path) -> dict[str, object]:
    os.environ["DATABASE_URL"] = source_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from bench.export_memory import populate
    from memoryhub.actors import Actor
    from memoryhub.queries.memories import list_memories

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    migrated = time.perf_counter() - started
    user = populate(memories)
    for mode in user.modes.all():
        list_memories(user=user, mode=mode, actor=Actor.system("backup-drill"))

    started = time.perf_counter()
    call_command("backup", "--to", str(work / "dumps"), "--keys-to", str(work / "keys"))
    backed_up = time.perf_counter() - started
    [folder] = (work / "dumps").iterdir()
    [keys] = (work / "keys").iterdir()

    target_url = target.create_database("restored")  # type: ignore[attr-defined]
    out = StringIO()
    started = time.perf_counter()
    call_command(
        "restore", str(folder), "--database-url", target_url, "--keys", str(keys), stdout=out
    )
    restored = time.perf_counter() - started
    return {
        "memories": memories,
        "migrate_seconds": round(migrated, 1),
        "backup_seconds": round(backed_up, 1),
        "dump_megabytes": round((folder / "database.dump").stat().st_size / 1e6, 1),
        "restore_and_verify_seconds": round(restored, 1),
        "verify_output": out.getvalue().strip().splitlines()[-1],
        "load_average": os.getloadavg()[0],
    }


if __name__ == "__main__":
    main()
