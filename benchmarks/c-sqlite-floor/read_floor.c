// The storage floor of a read call: what SQLite alone costs for the statements a read method
// runs, with no RPC, no Swift and no thread hop. On a copy of a store the service migrated
// and the benchmark seeded, in WAL mode, writing nothing: each call is one read transaction (BEGIN, the
// statements, COMMIT), every statement prepared once, stepped to its end, and every column of
// every row taken as the store would (text, blob, integer or real).
//
// The statements come from a file, one a line: the SQL, then its parameters, separated by
// tabs; a parameter `@now` is the time now as the stores keep dates ("YYYY-MM-DD HH:MM:SS.SSS").
//
// Prints one JSON line: the CPU time (user + system, this process only) per call and the rows a
// call read.
//   read_floor DB-PATH STATEMENTS-FILE [--calls N]
#define PROGRAM "read_floor"
#include "floor.h"

enum { max_statements = 16, max_parameters = 8, max_line = 4096 };

struct statement {
    sqlite3_stmt *prepared;
    int parameters;
    char *values[max_parameters];
};

// Takes every column of the current row as its type says; answers a sum so that nothing is
// optimized away.
static long long take_columns(sqlite3_stmt *statement) {
    long long sum = 0;
    int count = sqlite3_column_count(statement);
    for (int column = 0; column < count; column++) {
        switch (sqlite3_column_type(statement, column)) {
        case SQLITE_INTEGER: sum += sqlite3_column_int64(statement, column); break;
        case SQLITE_FLOAT: sum += (long long)sqlite3_column_double(statement, column); break;
        case SQLITE_TEXT:
            sum += sqlite3_column_text(statement, column)[0];
            sum += sqlite3_column_bytes(statement, column);
            break;
        case SQLITE_BLOB:
            sqlite3_column_blob(statement, column);
            sum += sqlite3_column_bytes(statement, column);
            break;
        default: break;
        }
    }
    return sum;
}

static int read_statements(const char *file, struct statement *statements) {
    FILE *input = fopen(file, "r");
    if (!input) {
        perror(file);
        exit(2);
    }
    char line[max_line];
    int count = 0;
    while (fgets(line, sizeof line, input)) {
        if (!strchr(line, '\n') && !feof(input)) {
            fprintf(stderr, PROGRAM ": a line of %s is longer than %d bytes\n", file, max_line - 2);
            exit(2);
        }
        line[strcspn(line, "\n")] = 0;
        if (!line[0]) continue;
        if (count == max_statements) {
            fprintf(stderr, PROGRAM ": at most %d statements\n", max_statements);
            exit(2);
        }
        struct statement *statement = &statements[count++];
        // strsep, not strtok: an empty parameter (two tabs) is a parameter.
        char *rest = line, *field = strsep(&rest, "\t");
        statement->prepared = prepare(field);
        statement->parameters = 0;
        while ((field = strsep(&rest, "\t"))) {
            if (statement->parameters == max_parameters) {
                fprintf(stderr, PROGRAM ": at most %d parameters a statement\n", max_parameters);
                exit(2);
            }
            statement->values[statement->parameters++] = strdup(field);
        }
        if (statement->parameters != sqlite3_bind_parameter_count(statement->prepared)) {
            fprintf(stderr, PROGRAM ": %d parameters given for: %s\n", statement->parameters,
                    sqlite3_sql(statement->prepared));
            exit(2);
        }
    }
    fclose(input);
    if (!count) {
        fprintf(stderr, PROGRAM ": %s holds no statement\n", file);
        exit(2);
    }
    return count;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s DB-PATH STATEMENTS-FILE [--calls N]\n", argv[0]);
        return 2;
    }
    long calls = 100000;
    for (int i = 3; i < argc; i += 2) {
        if (i + 1 == argc) {
            fprintf(stderr, PROGRAM ": %s needs a value\n", argv[i]);
            return 2;
        }
        if (!strcmp(argv[i], "--calls")) calls = atol(argv[i + 1]);
        else {
            fprintf(stderr, PROGRAM ": unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (calls < 1) {
        fprintf(stderr, PROGRAM ": --calls is at least 1\n");
        return 2;
    }
    // Opened as the store's are: WAL (a read takes its snapshot through the shared memory's read
    // marks). Nothing is written.
    if (sqlite3_open(argv[1], &db) != SQLITE_OK) die("open");
    exec("PRAGMA journal_mode = WAL");
    struct statement statements[max_statements];
    int count = read_statements(argv[2], statements), uses_now = 0;
    for (int s = 0; s < count; s++)
        for (int p = 0; p < statements[s].parameters; p++) uses_now |= !strcmp(statements[s].values[p], "@now");
    sqlite3_stmt *begin = prepare("BEGIN DEFERRED"), *commit = prepare("COMMIT");

    char now[32];
    long long sum = 0, rows = 0;
    double cpu_start = cpu_seconds(), wall_start = wall_seconds();
    for (long call = 0; call < calls; call++) {
        if (uses_now) { // the date text is the caller's work too: Hearth formats it for the call
            struct timespec clock;
            clock_gettime(CLOCK_REALTIME, &clock);
            date_text(now, sizeof now, (long long)clock.tv_sec * 1000 + clock.tv_nsec / 1000000);
        }
        run(begin);
        for (int s = 0; s < count; s++) {
            struct statement *statement = &statements[s];
            for (int p = 0; p < statement->parameters; p++) {
                const char *value = strcmp(statement->values[p], "@now") ? statement->values[p] : now;
                sqlite3_bind_text(statement->prepared, p + 1, value, -1, SQLITE_STATIC);
            }
            int code;
            while ((code = sqlite3_step(statement->prepared)) == SQLITE_ROW) {
                sum += take_columns(statement->prepared);
                rows++;
            }
            if (code != SQLITE_DONE) die(sqlite3_sql(statement->prepared));
            sqlite3_reset(statement->prepared);
        }
        run(commit);
    }
    double cpu = cpu_seconds() - cpu_start, wall = wall_seconds() - wall_start;
    printf("{\"calls\": %ld, \"statements\": %d, \"rowsPerCall\": %.2f, \"cpuMicrosPerCall\": %.3f, "
           "\"wallMicrosPerCall\": %.3f, \"checksum\": %lld}\n",
           calls, count, (double)rows / calls, cpu / calls * 1e6, wall / calls * 1e6, sum);
    sqlite3_close(db);
    return 0;
}
