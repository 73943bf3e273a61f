// The storage floor of a heartbeat: what SQLite alone costs for the writes a RecordHeartbeat
// must make durable, with no RPC, no Swift and no thread hop. Same schema and indexes as the
// safety store, WAL with synchronous = NORMAL, group commit of BATCH heartbeats per
// transaction, USERS armed users taken round-robin (ids "bench-0", "bench-1", ... as
// `hearth bench-safety` names them), every heartbeat a new check-in.
//
// Two workloads:
//   full: the statements Hearth runs for a check-in (each in a savepoint): read the profile,
//         read the last hour's heartbeats, insert the heartbeat, read the period's alerts,
//         count the contacts, save the profile's switch (its due time moves, so its index does)
//   min:  only the two writes no design can skip (insert the heartbeat, update the profile)
//
// Prints one JSON line: the CPU time (user + system, this process only) per heartbeat.
//   heartbeat_floor DB-PATH [--workload full|min] [--users N] [--heartbeats N] [--batch N]
#define PROGRAM "heartbeat_floor"
#include "floor.h"

// The safety store's schema as migrated, v3 (services/Safety/Store/SafetyRecords.swift).
static const char *schema =
    "CREATE TABLE profile (user_id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, email TEXT NOT NULL,"
    " threshold_hours INTEGER NOT NULL, language TEXT NOT NULL, time_zone TEXT NOT NULL,"
    " reminder_enabled BOOLEAN NOT NULL, reminder_hour INTEGER NOT NULL, reminder_minute INTEGER NOT NULL,"
    " push_token TEXT NOT NULL, count_activity BOOLEAN NOT NULL, period_start DATETIME NOT NULL,"
    " last_check_in_at DATETIME, snoozes INTEGER NOT NULL, paused_until DATETIME, epoch INTEGER NOT NULL,"
    " check_in_epoch INTEGER NOT NULL, next_due_at DATETIME, created_at DATETIME NOT NULL,"
    " updated_at DATETIME NOT NULL);"
    "CREATE INDEX profile_due ON profile(next_due_at) WHERE next_due_at IS NOT NULL;"
    "CREATE TABLE contact (id TEXT PRIMARY KEY NOT NULL,"
    " user_id TEXT NOT NULL REFERENCES profile(user_id) ON DELETE CASCADE, email TEXT NOT NULL,"
    " email_key TEXT NOT NULL, name TEXT NOT NULL, created_at DATETIME NOT NULL, UNIQUE (user_id, email_key));"
    "CREATE TABLE heartbeat (user_id TEXT NOT NULL REFERENCES profile(user_id) ON DELETE CASCADE,"
    " at DATETIME NOT NULL, time_zone TEXT NOT NULL, device_info TEXT NOT NULL, source TEXT NOT NULL,"
    " request_id TEXT NOT NULL, counted BOOLEAN NOT NULL DEFAULT 1, PRIMARY KEY (user_id, request_id)) WITHOUT ROWID;"
    "CREATE INDEX heartbeat_time ON heartbeat(user_id, at, counted);"
    "CREATE TABLE alert (id TEXT PRIMARY KEY NOT NULL,"
    " user_id TEXT NOT NULL REFERENCES profile(user_id) ON DELETE CASCADE, epoch INTEGER NOT NULL,"
    " kind TEXT NOT NULL, channel TEXT NOT NULL, contact_id TEXT NOT NULL, address TEXT NOT NULL,"
    " subject TEXT NOT NULL, body TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL,"
    " last_error TEXT NOT NULL, next_attempt_at DATETIME, sent_at DATETIME, created_at DATETIME NOT NULL,"
    " claimed_at DATETIME, may_have_arrived BOOLEAN NOT NULL DEFAULT 0);"
    "CREATE UNIQUE INDEX alert_once ON alert(user_id, epoch, kind, contact_id) WHERE kind != 'test';"
    "CREATE INDEX alert_user ON alert(user_id, epoch);"
    "CREATE INDEX alert_due ON alert(channel, next_attempt_at) WHERE state = 'pending';"
    "CREATE INDEX alert_claimed ON alert(claimed_at) WHERE claimed_at IS NOT NULL;";

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s DB-PATH [--workload full|min] [--users N] [--heartbeats N] [--batch N]\n", argv[0]);
        return 2;
    }
    const char *path = argv[1], *workload = "full";
    long users = 20000, heartbeats = 60000, batch = 16;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--workload")) workload = argv[i + 1];
        else if (!strcmp(argv[i], "--users")) users = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--heartbeats")) heartbeats = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) batch = atol(argv[i + 1]);
        else {
            fprintf(stderr, "heartbeat_floor: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    int full = !strcmp(workload, "full");
    if (!full && strcmp(workload, "min")) {
        fprintf(stderr, "heartbeat_floor: --workload is full or min\n");
        return 2;
    }
    if (users < 1 || heartbeats < 1 || batch < 1) {
        fprintf(stderr, "heartbeat_floor: --users, --heartbeats and --batch are at least 1\n");
        return 2;
    }
    if (sqlite3_open(path, &db) != SQLITE_OK) die("open");
    exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;");
    exec(schema);

    // Arm every user: a profile and a contact each, checked in an hour ago.
    long long start = (long long)time(NULL) * 1000;
    char now_text[32], due_text[32], user[32], id[48];
    date_text(now_text, sizeof now_text, start - 3600 * 1000);
    date_text(due_text, sizeof due_text, start + 47 * 3600 * 1000LL);
    sqlite3_stmt *add_profile = prepare(
        "INSERT INTO profile VALUES (?1, 'Bench', 'bench@example.com', 48, 'en', 'Europe/Berlin', 0, 9, 0, '', 1,"
        " ?2, ?2, 0, NULL, 1, 1, ?3, ?2, ?2)");
    sqlite3_stmt *add_contact = prepare("INSERT INTO contact VALUES (?1, ?2, 'c@example.com', 'c@example.com', 'C', ?3)");
    exec("BEGIN");
    for (long i = 0; i < users; i++) {
        snprintf(user, sizeof user, "bench-%ld", i);
        snprintf(id, sizeof id, "contact-%ld", i);
        bind_texts(add_profile, SQLITE_TRANSIENT, 3, user, now_text, due_text);
        run(add_profile);
        bind_texts(add_contact, SQLITE_TRANSIENT, 3, id, user, now_text);
        run(add_contact);
    }
    exec("COMMIT; PRAGMA wal_checkpoint(TRUNCATE);");

    sqlite3_stmt *begin = prepare("BEGIN IMMEDIATE"), *commit = prepare("COMMIT");
    sqlite3_stmt *savepoint = prepare("SAVEPOINT batched_write"), *release = prepare("RELEASE SAVEPOINT batched_write");
    sqlite3_stmt *read_profile = prepare("SELECT * FROM profile WHERE user_id = ?1");
    sqlite3_stmt *recent =
        prepare("SELECT at, counted, request_id = ?1 FROM heartbeat WHERE user_id = ?2 AND at > ?3 ORDER BY at");
    sqlite3_stmt *insert = prepare(
        "INSERT INTO heartbeat (user_id, at, time_zone, device_info, source, request_id, counted) VALUES (?1, ?2,"
        " 'Europe/Berlin', 'bench', 'app', ?3, 1) ON CONFLICT (user_id, request_id) DO NOTHING");
    sqlite3_stmt *alerts = prepare("SELECT kind, state, contact_id, may_have_arrived FROM alert WHERE user_id = ?1 AND epoch >= ?2");
    sqlite3_stmt *contacts = prepare("SELECT COUNT(*) FROM contact WHERE user_id = ?1");
    sqlite3_stmt *save = prepare(
        "UPDATE profile SET time_zone = 'Europe/Berlin', period_start = ?2, last_check_in_at = ?2, snoozes = 0,"
        " epoch = epoch + 1, check_in_epoch = epoch + 1, next_due_at = ?3, updated_at = ?2 WHERE user_id = ?1");

    double cpu0 = cpu_seconds(), wall0 = wall_seconds();
    char hour_ago[32];
    for (long done = 0; done < heartbeats;) {
        run(begin);
        for (long k = 0; k < batch && done < heartbeats; k++, done++) {
            long long at = start + done;  // a millisecond apart: every one a new check-in
            date_text(now_text, sizeof now_text, at);
            date_text(hour_ago, sizeof hour_ago, at - 3600 * 1000);
            date_text(due_text, sizeof due_text, at + 45 * 3600 * 1000LL);
            snprintf(user, sizeof user, "bench-%ld", done % users);
            snprintf(id, sizeof id, "request-%ld", done);
            if (full) {
                run(savepoint);
                bind_texts(read_profile, SQLITE_STATIC, 1, user);
                run(read_profile);
                bind_texts(recent, SQLITE_STATIC, 3, id, user, hour_ago);
                run(recent);
            }
            bind_texts(insert, SQLITE_STATIC, 3, user, now_text, id);
            run(insert);
            if (full) {
                bind_texts(alerts, SQLITE_STATIC, 1, user);
                sqlite3_bind_int64(alerts, 2, 1);
                run(alerts);
                bind_texts(contacts, SQLITE_STATIC, 1, user);
                run(contacts);
            }
            bind_texts(save, SQLITE_STATIC, 3, user, now_text, due_text);
            run(save);
            if (full) run(release);
        }
        run(commit);
    }
    double cpu = cpu_seconds() - cpu0, wall = wall_seconds() - wall0;
    printf("{\"workload\": \"%s\", \"users\": %ld, \"heartbeats\": %ld, \"batch\": %ld, "
           "\"cpuMicrosPerHeartbeat\": %.2f, \"heartbeatsPerSecond\": %.0f}\n",
           workload, users, heartbeats, batch, cpu / heartbeats * 1e6, heartbeats / wall);
    sqlite3_close(db);
    return 0;
}
