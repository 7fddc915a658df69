/* crashdb: a tiny SQLite test double for the library-level crash test (#18 item 5), built by
 * tests/c_crash.rs with `cc crashdb.c -lsqlite3`.
 *
 *   crashdb child DB LEDGER [--ack-early]  commit 20 rows one by one, appending an ack line to
 *                                          LEDGER after each COMMIT; then stage 10 more rows
 *                                          in an open transaction, create DB.staged and wait to
 *                                          be killed. --ack-early acks the staged rows too,
 *                                          before their COMMIT (the bug a crash test catches).
 *   crashdb verify DB                      read the ledger on stdin; print `verify: verified ID`
 *                                          or `verify: lost ID` per acked row, and
 *                                          `verify: partial ID` per visible row nobody acked.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void must(int rc, sqlite3 *db, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "crashdb: %s: %s\n", what, sqlite3_errmsg(db));
        exit(2);
    }
}

static void ack(FILE *ledger, int id) {
    /* One write per line: what the ledger file promises. */
    fprintf(ledger, "{\"kind\":\"row\",\"id\":\"%d\"}\n", id);
    fflush(ledger);
}

static void insert(sqlite3 *db, int id) {
    char sql[96];
    snprintf(sql, sizeof sql, "INSERT INTO t(id, v) VALUES (%d, 'row %d')", id, id);
    must(sqlite3_exec(db, sql, 0, 0, 0), db, "insert");
}

static int child(const char *path, const char *ledger_path, int ack_early) {
    sqlite3 *db;
    must(sqlite3_open(path, &db), db, "open");
    must(sqlite3_exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v TEXT)", 0, 0, 0), db, "schema");
    FILE *ledger = fopen(ledger_path, "a");
    if (!ledger) { perror(ledger_path); return 2; }
    for (int i = 1; i <= 20; i++) {
        must(sqlite3_exec(db, "BEGIN", 0, 0, 0), db, "begin");
        insert(db, i);
        must(sqlite3_exec(db, "COMMIT", 0, 0, 0), db, "commit");
        ack(ledger, i);
    }
    must(sqlite3_exec(db, "BEGIN", 0, 0, 0), db, "begin");
    for (int i = 21; i <= 30; i++) {
        insert(db, i);
        if (ack_early) ack(ledger, i);
    }
    char marker[4096];
    snprintf(marker, sizeof marker, "%s.staged", path);
    FILE *m = fopen(marker, "w");
    if (m) fclose(m);
    for (;;) pause(); /* mid-transaction until SIGKILL */
}

static int verify(const char *path) {
    sqlite3 *db;
    must(sqlite3_open(path, &db), db, "open");
    static char acked[100000];
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        const char *p = strstr(line, "\"id\":\"");
        if (!p || strstr(line, "\"fault\"")) continue;
        int id = atoi(p + 6);
        if (id <= 0 || id >= (int)sizeof acked) continue;
        acked[id] = 1;
        char sql[64];
        snprintf(sql, sizeof sql, "SELECT v FROM t WHERE id = %d", id);
        sqlite3_stmt *st;
        must(sqlite3_prepare_v2(db, sql, -1, &st, 0), db, "select");
        int found = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        printf("verify: %s %d\n", found ? "verified" : "lost", id);
    }
    sqlite3_stmt *st;
    must(sqlite3_prepare_v2(db, "SELECT id FROM t", -1, &st, 0), db, "scan");
    while (sqlite3_step(st) == SQLITE_ROW) {
        int id = sqlite3_column_int(st, 0);
        if (id <= 0 || id >= (int)sizeof acked || !acked[id]) printf("verify: partial %d\n", id);
    }
    sqlite3_finalize(st);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "child")) return child(argv[2], argv[3], argc > 4 && !strcmp(argv[4], "--ack-early"));
    if (argc == 3 && !strcmp(argv[1], "verify")) return verify(argv[2]);
    fprintf(stderr, "usage: crashdb child DB LEDGER [--ack-early] | crashdb verify DB\n");
    return 2;
}
