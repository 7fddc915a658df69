/*
 * objstore: a tiny object store harness for `volley bench` (examples/bench/README.md).
 *
 * Objects are files under DIR/objects, written to a temporary name, fsync'd and renamed so
 * nothing is visible half-written. A "transaction table" is an append-only log (DIR/txlog):
 * `B id`, then `R id key size` per row, then `C id` once the rows are durable; a reader
 * counts only rows of committed transactions. Each mode prints key=value lines that
 * `volley bench --parse kv` turns into metrics.
 *
 *   objstore micro  [--ops N] [--payload BYTES] [--dir D]     insert, read, delete N objects
 *   objstore stress [--ops N] [--min B] [--max B] [--txn-batch K] [--seed S] [--dir D]
 *   objstore stream [--bytes N] [--chunk C] [--dir D]         one large object, chunked
 *   objstore alloc MIB [HOLD_MS]                              touch MIB MiB, hold, exit
 *   objstore crash-child [--rows N] [--commit] [--dir D]      stage rows, wait to be killed
 *   objstore verify [--dir D]                                 count committed rows
 *
 * crash-child and verify are for a crash test: kill crash-child (SIGKILL) once it printed
 * `staged=N`, then `verify` must report `committed_rows=0` (with --commit: N).
 *
 * Build: cc -O2 -o objstore objstore.c   (C99, POSIX; no other dependency)
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *dir = "/tmp/objstore-bench";

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
    fprintf(stderr, "objstore: %s: %s\n", what, strerror(errno));
    exit(1);
}

static long long arg(int argc, char **argv, const char *name, long long def) {
    for (int i = 0; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return atoll(argv[i + 1]);
    return def;
}

static const char *sarg(int argc, char **argv, const char *name, const char *def) {
    for (int i = 0; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return argv[i + 1];
    return def;
}

static void mkdirs(void) {
    char p[4096];
    if (mkdir(dir, 0755) && errno != EEXIST) die(dir);
    snprintf(p, sizeof p, "%s/objects", dir);
    if (mkdir(p, 0755) && errno != EEXIST) die(p);
}

static void write_all(int fd, const char *b, size_t n) {
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            die("write");
        }
        b += w;
        n -= (size_t)w;
    }
}

/* Store one object durably: temp file, fsync, rename. */
static void put(long key, const char *buf, size_t n, size_t chunk) {
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/objects/.%ld.tmp", dir, key);
    snprintf(path, sizeof path, "%s/objects/%ld", dir, key);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die(tmp);
    for (size_t off = 0; off < n; off += chunk) write_all(fd, buf, n - off < chunk ? n - off : chunk);
    if (fsync(fd)) die("fsync");
    close(fd);
    if (rename(tmp, path)) die("rename");
}

static size_t get(long key, char *buf, size_t cap) {
    char path[4096];
    snprintf(path, sizeof path, "%s/objects/%ld", dir, key);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    size_t total = 0;
    ssize_t r;
    while ((r = read(fd, buf, cap)) > 0) total += (size_t)r;
    close(fd);
    return total;
}

static void del(long key) {
    char path[4096];
    snprintf(path, sizeof path, "%s/objects/%ld", dir, key);
    unlink(path);
}

static double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

static int micro(int argc, char **argv) {
    long ops = arg(argc, argv, "--ops", 64);
    size_t payload = (size_t)arg(argc, argv, "--payload", 4096);
    char *buf = calloc(1, payload ? payload : 1);
    if (!buf) die("calloc");
    mkdirs();
    double t0 = now();
    for (long i = 0; i < ops; i++) put(i, buf, payload, payload);
    double t1 = now();
    for (long i = 0; i < ops; i++) get(i, buf, payload ? payload : 1);
    double t2 = now();
    for (long i = 0; i < ops; i++) del(i);
    double t3 = now();
    double bytes = (double)ops * payload;
    printf("micro backend=file ops=%ld payload=%zu insert_seconds=%.6f insert_mib_per_s=%.2f\n",
           ops, payload, t1 - t0, mib(bytes) / (t1 - t0));
    printf("read_seconds=%.6f read_mib_per_s=%.2f delete_seconds=%.6f delete_mib_per_s=%.2f\n",
           t2 - t1, mib(bytes) / (t2 - t1), t3 - t2, mib(bytes) / (t3 - t2));
    printf("ops_per_s=%.1f\n", 3.0 * ops / (t3 - t0));
    free(buf);
    return 0;
}

/* xorshift: reproducible sizes and operations without libc's rand state. */
static unsigned long long rng = 88172645463325252ULL;
static unsigned long long next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int stress(int argc, char **argv) {
    long ops = arg(argc, argv, "--ops", 512);
    size_t lo = (size_t)arg(argc, argv, "--min", 1024), hi = (size_t)arg(argc, argv, "--max", 8192);
    long batch = arg(argc, argv, "--txn-batch", 16);
    rng ^= (unsigned long long)arg(argc, argv, "--seed", 1) * 0x9E3779B97F4A7C15ULL;
    if (hi < lo) hi = lo;
    char *buf = calloc(1, hi ? hi : 1);
    char *live = calloc((size_t)ops + 1, 1);
    if (!buf || !live) die("calloc");
    mkdirs();
    double written = 0, readb = 0, t0 = now();
    long nlive = 0, keys = 0;
    for (long i = 0; i < ops; i++) {
        unsigned long long r = next() % 10;
        if (r < 5 || keys == 0) {
            size_t n = lo + (size_t)(next() % (hi - lo + 1));
            put(keys, buf, n, n);
            live[keys++] = 1;
            nlive++;
            written += n;
        } else if (r < 8) {
            readb += get((long)(next() % keys), buf, hi ? hi : 1);
        } else {
            long k = (long)(next() % keys);
            if (live[k]) {
                del(k);
                live[k] = 0;
                nlive--;
            }
        }
        /* A durability point per batch, as a commit would be. */
        if (batch > 0 && i % batch == batch - 1) {
            char d[4096];
            snprintf(d, sizeof d, "%s/objects", dir);
            int dfd = open(d, O_RDONLY);
            if (dfd >= 0) {
                fsync(dfd);
                close(dfd);
            }
        }
    }
    double t = now() - t0;
    printf("stress backend=file ops=%ld total_seconds=%.4f ops_per_s=%.1f written=%.2fMiB read=%.2fMiB live_objects=%ld\n",
           ops, t, ops / t, mib(written), mib(readb), nlive);
    for (long k = 0; k < keys; k++) if (live[k]) del(k);
    free(buf);
    free(live);
    return 0;
}

static int stream(int argc, char **argv) {
    long long bytes = arg(argc, argv, "--bytes", 64LL << 20);
    size_t chunk = (size_t)arg(argc, argv, "--chunk", 65536);
    if (chunk == 0) chunk = 65536;
    char *buf = calloc(1, chunk);
    char path[4096];
    if (!buf) die("calloc");
    mkdirs();
    snprintf(path, sizeof path, "%s/objects/stream", dir);
    double t0 = now();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die(path);
    for (long long off = 0; off < bytes; off += (long long)chunk)
        write_all(fd, buf, (size_t)(bytes - off < (long long)chunk ? bytes - off : (long long)chunk));
    if (fsync(fd)) die("fsync");
    close(fd);
    double t1 = now();
    fd = open(path, O_RDONLY);
    if (fd < 0) die(path);
    long long total = 0;
    ssize_t r;
    while ((r = read(fd, buf, chunk)) > 0) total += r;
    close(fd);
    double t2 = now();
    unlink(path);
    printf("stream backend=file bytes=%lld write_seconds=%.3f write_mib_per_s=%.2f read_seconds=%.3f read_mib_per_s=%.2f chunk_size=%zu\n",
           total, t1 - t0, mib((double)bytes) / (t1 - t0), t2 - t1, mib((double)total) / (t2 - t1), chunk);
    free(buf);
    return 0;
}

static int alloc(int argc, char **argv) {
    long mb = argc > 2 ? atol(argv[2]) : 64;
    long hold = argc > 3 ? atol(argv[3]) : 200;
    size_t n = (size_t)mb << 20;
    char *p = malloc(n);
    if (!p) die("malloc");
    long page = sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < n; i += (size_t)page) p[i] = (char)i;
    struct timespec ts = {hold / 1000, (hold % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    printf("allocated=%ldMiB\n", mb);
    free(p);
    return 0;
}

static FILE *txlog(const char *mode) {
    char path[4096];
    snprintf(path, sizeof path, "%s/txlog", dir);
    return fopen(path, mode);
}

/* Stage rows of one transaction (durably, as a write-ahead log would) and never commit:
 * the parent kills us; `verify` must then see 0 committed rows. */
static int crash_child(int argc, char **argv) {
    long rows = arg(argc, argv, "--rows", 32);
    mkdirs();
    FILE *f = txlog("a");
    if (!f) die("txlog");
    long id = (long)getpid();
    fprintf(f, "B %ld\n", id);
    for (long i = 0; i < rows; i++) fprintf(f, "R %ld %ld 2097152\n", id, i);
    fflush(f);
    fsync(fileno(f));
    /* --commit: a control run whose rows must be seen (the verifier must be able to count). */
    int commit = 0;
    for (int i = 2; i < argc; i++) commit |= !strcmp(argv[i], "--commit");
    if (commit) {
        fprintf(f, "C %ld\n", id);
        fflush(f);
        fsync(fileno(f));
    }
    printf("staged=%ld txn=%ld committed=%d\n", rows, id, commit);
    fflush(stdout);
    for (;;) pause(); /* killed here: without --commit, the commit record never comes */
    return 0;
}

static int verify(void) {
    FILE *f = txlog("r");
    long committed = 0, staged = 0;
    if (f) {
        /* Two passes: committed ids first, then their rows. Ids are few in a test log. */
        long ids[1024], nids = 0, id;
        char kind;
        while (fscanf(f, " %c %ld%*[^\n]", &kind, &id) == 2)
            if (kind == 'C' && nids < 1024) ids[nids++] = id;
        rewind(f);
        while (fscanf(f, " %c %ld%*[^\n]", &kind, &id) == 2) {
            if (kind != 'R') continue;
            staged++;
            for (long i = 0; i < nids; i++)
                if (ids[i] == id) {
                    committed++;
                    break;
                }
        }
        fclose(f);
    }
    printf("verify committed_rows=%ld uncommitted_rows=%ld\n", committed, staged - committed);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: objstore micro|stress|stream|alloc|crash-child|verify [options]\n");
        return 2;
    }
    dir = sarg(argc, argv, "--dir", dir);
    const char *m = argv[1];
    if (!strcmp(m, "micro")) return micro(argc, argv);
    if (!strcmp(m, "stress")) return stress(argc, argv);
    if (!strcmp(m, "stream")) return stream(argc, argv);
    if (!strcmp(m, "alloc")) return alloc(argc, argv);
    if (!strcmp(m, "crash-child")) return crash_child(argc, argv);
    if (!strcmp(m, "verify")) return verify();
    fprintf(stderr, "objstore: unknown mode '%s'\n", m);
    return 2;
}
