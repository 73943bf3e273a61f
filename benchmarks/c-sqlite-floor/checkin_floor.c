// The storage floor of a check-in: what SQLite alone costs for the statements CreateCheckIn
// (without a photo) runs, with no RPC, no Swift and no thread hop. It works on a database that
// Hearth's checkins service migrated (so the schema and indexes are the service's own), WAL with
// synchronous = NORMAL, group commit of BATCH check-ins per transaction, each one a new row in
// sessions of their own (10 a local day, the daily cap), as `hearth bench-checkins create` sends.
//
// Two workloads:
//   create: the call's own transaction, with the statements and SQL of CheckinStore.createCheckIn:
//           the request key, the session, the day's count read and bumped, the request key, the
//           check-in, the owner's push and the activity forwarded to safety queued;
//   full:   also what the call makes the process do afterwards: the session read before the write
//           (on the event loop), and the push outbox's and the relay's passes (read what is due,
//           check each push is still queued, record every outcome in one transaction each).
//
// Prints one JSON line: the CPU time (user + system, this process only) per check-in.
//   checkin_floor DB-PATH [--workload create|full] [--checkins N] [--batch N]
#define PROGRAM "checkin_floor"
#include "floor.h"

enum { per_day = 10, days = 400, per_session = per_day * days };

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s DB-PATH [--workload create|full] [--checkins N] [--batch N]\n", argv[0]);
        return 2;
    }
    const char *path = argv[1], *workload = "full";
    long checkins = 40000, batch = 16;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--workload")) workload = argv[i + 1];
        else if (!strcmp(argv[i], "--checkins")) checkins = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) batch = atol(argv[i + 1]);
        else {
            fprintf(stderr, PROGRAM ": unknown option %s\n", argv[i]);
            return 2;
        }
    }
    int full = !strcmp(workload, "full");
    if (!full && strcmp(workload, "create")) {
        fprintf(stderr, PROGRAM ": --workload is create or full\n");
        return 2;
    }
    if (checkins < 1 || batch < 1) {
        fprintf(stderr, PROGRAM ": --checkins and --batch are at least 1\n");
        return 2;
    }
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) die("open (a store hearth migrated)");
    exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;");

    // A nest and the sessions the check-ins go into, from 401 days ago.
    long long start = (long long)time(NULL) * 1000, first_day = start - (long long)(days + 1) * 86400 * 1000;
    char now_text[32], at_text[32], end_text[32], id[64], key[64], session[32], day[16], message[512];
    date_text(at_text, sizeof at_text, first_day);
    date_text(end_text, sizeof end_text, start + 86400 * 1000LL);
    date_text(now_text, sizeof now_text, start);
    exec("BEGIN");
    sqlite3_stmt *add_nest = prepare("INSERT INTO nest VALUES ('floor-nest', 'Floor', 'owner', ?1)");
    bind_texts(add_nest, SQLITE_STATIC, 1, now_text);
    run(add_nest);
    sqlite3_stmt *add_session = prepare(
        "INSERT INTO session (id, nest_id, owner_user_id, sitter_user_id, starts_at, ends_at, time_zone, created_at)"
        " VALUES (?1, 'floor-nest', 'owner', 'sitter', ?2, ?3, 'UTC', ?4)");
    for (long s = 0; s <= checkins / per_session; s++) {
        snprintf(session, sizeof session, "session-%ld", s);
        bind_texts(add_session, SQLITE_TRANSIENT, 4, session, at_text, end_text, now_text);
        run(add_session);
    }
    exec("COMMIT; PRAGMA wal_checkpoint(TRUNCATE);");

    sqlite3_stmt *begin = prepare("BEGIN IMMEDIATE TRANSACTION"), *commit = prepare("COMMIT TRANSACTION");
    sqlite3_stmt *begin_read = prepare("BEGIN DEFERRED TRANSACTION");
    sqlite3_stmt *earlier =
        prepare("SELECT check_in_id FROM check_in_request WHERE submitter_user_id = ? AND client_request_id = ?");
    sqlite3_stmt *read_session = prepare("SELECT * FROM session WHERE id = ?");
    sqlite3_stmt *count = prepare("SELECT count FROM daily_count WHERE session_id = ? AND local_day = ?");
    sqlite3_stmt *bump = prepare(
        "INSERT INTO daily_count (session_id, local_day, count) VALUES (?, ?, 1)"
        " ON CONFLICT (session_id, local_day) DO UPDATE SET count = count + 1");
    sqlite3_stmt *request =
        prepare("INSERT INTO check_in_request (submitter_user_id, client_request_id, check_in_id) VALUES (?, ?, ?)");
    sqlite3_stmt *insert = prepare(
        "INSERT INTO check_in (id, session_id, submitter_user_id, caption, captured_at, created_at, photo_alt_text,"
        " viewed_at, client_request_id, photo_format, photo_width, photo_height, photo_bytes)"
        " VALUES (?, ?, 'sitter', 'Update: all good, walk done', ?, ?, '', NULL, ?, NULL, NULL, NULL, NULL)");
    sqlite3_stmt *push = prepare("INSERT INTO push_outbox (id, message, next_attempt_at) VALUES (?, ?, ?)");
    sqlite3_stmt *relay = prepare(
        "INSERT INTO relay_outbox (id, method, payload, user_id, next_attempt_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (id) DO NOTHING");
    sqlite3_stmt *push_due = prepare(
        "SELECT id, message, attempts FROM push_outbox WHERE delivered_at IS NULL AND failed_at IS NULL"
        " AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT 100");
    sqlite3_stmt *push_queued =
        prepare("SELECT 1 FROM push_outbox WHERE id = ? AND delivered_at IS NULL AND failed_at IS NULL");
    sqlite3_stmt *push_sent = prepare("UPDATE push_outbox SET delivered_at = ?, attempts = attempts + 1 WHERE id = ?");
    sqlite3_stmt *relay_due = prepare(
        "SELECT id, method, payload, user_id, attempts FROM relay_outbox WHERE delivered_at IS NULL AND failed_at IS NULL"
        " AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?");
    sqlite3_stmt *relay_sent =
        prepare("UPDATE relay_outbox SET delivered_at = ?, attempts = attempts + 1 WHERE id = ?");
    static const unsigned char payload[48] = {10, 8, 99, 104, 101, 99, 107, 105, 110, 115, 18, 36};

    double cpu0 = cpu_seconds(), wall0 = wall_seconds();
    char queued_id[96];
    for (long done = 0; done < checkins;) {
        long first = done;
        if (full) {  // the session read on the loop before each write
            for (long k = 0; k < batch && first + k < checkins; k++) {
                snprintf(session, sizeof session, "session-%ld", (first + k) / per_session);
                run(begin_read);
                bind_texts(read_session, SQLITE_STATIC, 1, session);
                run(read_session);
                run(commit);
            }
        }
        run(begin);
        for (long k = 0; k < batch && done < checkins; k++, done++) {
            long slot = done % per_session;
            long long at = first_day + (slot / per_day) * 86400 * 1000LL + 3600 * 1000 + (slot % per_day) * 60 * 1000;
            date_text(at_text, sizeof at_text, at);
            date_text(now_text, sizeof now_text, start + done);
            memcpy(day, at_text, 10);
            day[10] = 0;
            snprintf(session, sizeof session, "session-%ld", done / per_session);
            snprintf(id, sizeof id, "checkin-%08ld-0000-0000-0000-000000000000", done);
            snprintf(key, sizeof key, "bench-floor-%ld", done);
            bind_texts(earlier, SQLITE_STATIC, 2, "sitter", key);
            run(earlier);
            bind_texts(read_session, SQLITE_STATIC, 1, session);
            run(read_session);
            bind_texts(count, SQLITE_STATIC, 2, session, day);
            run(count);
            bind_texts(bump, SQLITE_STATIC, 2, session, day);
            run(bump);
            bind_texts(request, SQLITE_STATIC, 3, "sitter", key, id);
            run(request);
            bind_texts(insert, SQLITE_STATIC, 5, id, session, at_text, now_text, key);
            run(insert);
            snprintf(message, sizeof message,
                     "{\"id\":\"checkin.created:%s\",\"userID\":\"owner\",\"kind\":\"checkin.created\","
                     "\"title\":\"New check-in\",\"body\":\"Your sitter: Update: all good, walk done\","
                     "\"data\":{\"session_id\":\"%s\",\"check_in_id\":\"%s\"},\"createdAt\":\"%s\"}",
                     id, session, id, now_text);
            snprintf(queued_id, sizeof queued_id, "checkin.created:%s", id);
            bind_texts(push, SQLITE_STATIC, 3, queued_id, message, now_text);
            run(push);
            snprintf(queued_id, sizeof queued_id, "safety:checkins:sitter:%s", id);
            sqlite3_bind_text(relay, 1, queued_id, -1, SQLITE_STATIC);
            sqlite3_bind_text(relay, 2, "hearth.safety.v1.Safety/RecordActivity", -1, SQLITE_STATIC);
            sqlite3_bind_blob(relay, 3, payload, sizeof payload, SQLITE_STATIC);
            sqlite3_bind_text(relay, 4, "sitter", -1, SQLITE_STATIC);
            sqlite3_bind_text(relay, 5, at_text, -1, SQLITE_STATIC);
            run(relay);
        }
        run(commit);
        if (full) {  // the deliverers' passes: what is due, each push checked, the outcomes recorded
            static char due_ids[2][100][96];
            int counts[2] = {0, 0};
            run(begin_read);
            bind_texts(push_due, SQLITE_STATIC, 1, now_text);
            while (sqlite3_step(push_due) == SQLITE_ROW && counts[0] < 100)
                snprintf(due_ids[0][counts[0]++], sizeof due_ids[0][0], "%s", (const char *)sqlite3_column_text(push_due, 0));
            sqlite3_reset(push_due);
            run(commit);
            run(begin_read);
            bind_texts(relay_due, SQLITE_STATIC, 1, now_text);
            sqlite3_bind_int(relay_due, 2, 100);
            while (sqlite3_step(relay_due) == SQLITE_ROW && counts[1] < 100)
                snprintf(due_ids[1][counts[1]++], sizeof due_ids[1][0], "%s", (const char *)sqlite3_column_text(relay_due, 0));
            sqlite3_reset(relay_due);
            run(commit);
            for (int i = 0; i < counts[0]; i++) {
                run(begin_read);
                bind_texts(push_queued, SQLITE_STATIC, 1, due_ids[0][i]);
                run(push_queued);
                run(commit);
            }
            run(begin);
            for (int i = 0; i < counts[0]; i++) {
                bind_texts(push_sent, SQLITE_STATIC, 2, now_text, due_ids[0][i]);
                run(push_sent);
            }
            for (int i = 0; i < counts[1]; i++) {
                bind_texts(relay_sent, SQLITE_STATIC, 2, now_text, due_ids[1][i]);
                run(relay_sent);
            }
            run(commit);
        }
    }
    double cpu = cpu_seconds() - cpu0, wall = wall_seconds() - wall0;
    printf("{\"workload\": \"%s\", \"checkins\": %ld, \"batch\": %ld, \"cpuMicrosPerCheckIn\": %.2f, "
           "\"checkInsPerSecond\": %.0f}\n",
           workload, checkins, batch, cpu / checkins * 1e6, checkins / wall);
    sqlite3_close(db);
    return 0;
}
