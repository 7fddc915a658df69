/* The floor for command benchmarks: posix_spawn + waitpid of argv[2..] N times, nothing else.
 * bench/bench_cmd.sh compares `volley bench` and hyperfine against it. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

extern char **environ;

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: spawn_loop N CMD [ARGS...]\n");
        return 2;
    }
    long n = atol(argv[1]);
    for (long i = 0; i < n; i++) {
        pid_t pid;
        if (posix_spawnp(&pid, argv[2], NULL, NULL, argv + 2, environ)) return 1;
        int st;
        waitpid(pid, &st, 0);
    }
    return 0;
}
