// What the storage floor probes share: one SQLite connection, prepared statements, CPU and
// wall clocks, dates as Hearth's stores keep them. Each program defines PROGRAM (its name, for
// error messages) before including this.
#ifndef FLOOR_H
#define FLOOR_H
#define _GNU_SOURCE
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static sqlite3 *db;

static void die(const char *what) {
    fprintf(stderr, PROGRAM ": %s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
}

static void exec(const char *sql) {
    char *error = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &error) != SQLITE_OK) {
        fprintf(stderr, PROGRAM ": %s: %s\n", sql, error);
        exit(1);
    }
}

static sqlite3_stmt *prepare(const char *sql) {
    sqlite3_stmt *statement;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &statement, NULL) != SQLITE_OK) die(sql);
    return statement;
}

// Runs a prepared statement to its end and resets it; returns how many rows it gave.
static int run(sqlite3_stmt *statement) {
    int rows = 0, code;
    while ((code = sqlite3_step(statement)) == SQLITE_ROW) rows++;
    if (code != SQLITE_DONE) die(sqlite3_sql(statement));
    sqlite3_reset(statement);
    return rows;
}

// Binds COUNT texts to a statement's parameters 1 ... COUNT, each kept as `lifetime` says.
static inline void bind_texts(sqlite3_stmt *statement, sqlite3_destructor_type lifetime, int count, ...) {
    va_list texts;
    va_start(texts, count);
    for (int i = 1; i <= count; i++) sqlite3_bind_text(statement, i, va_arg(texts, const char *), -1, lifetime);
    va_end(texts);
}

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

static double wall_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec / 1e9;
}

// Dates as the store keeps them: "YYYY-MM-DD HH:MM:SS.SSS" text, UTC.
static void date_text(char *out, size_t size, long long millis) {
    time_t seconds = (time_t)(millis / 1000);
    struct tm parts;
    gmtime_r(&seconds, &parts);
    size_t n = strftime(out, size, "%Y-%m-%d %H:%M:%S", &parts);
    snprintf(out + n, size - n, ".%03lld", millis % 1000);
}

#endif
