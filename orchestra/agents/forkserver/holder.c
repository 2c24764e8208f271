/* The first process of a sandbox whose programs the fork server starts: holder.py's contract
 * (read its docstring) in C, so that a tree's PID 1 costs ~0.1 MiB of private memory instead of
 * a Python interpreter's 2.7 MiB (docs/performance.md, h-pss2). The launcher compiles it with the
 * host's C compiler (launch.build_holder) and runs holder.py where it cannot.
 *
 * argv[1]: the descriptor to say `ready` on. Then buzz-acp's pid, one line on stdin (EOF before
 * it: exit 1). TERM, INT and HUP are passed on to buzz-acp once its pid is known (dropped
 * before, as holder.py drops them); every child is reaped; the holder exits with buzz-acp's
 * status (128 + the signal that killed it) as soon as buzz-acp has exited. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t program; /* buzz-acp, once known */

static void forward(int signum) {
    if (program > 0)
        kill(program, signum);
}

static int read_pid(void) {
    char line[32];
    size_t used = 0;
    while (used == 0 || line[used - 1] != '\n') {
        if (used == sizeof line - 1)
            return -1;
        ssize_t got = read(0, line + used, sizeof line - 1 - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        used += (size_t)got;
    }
    line[used] = '\0';
    char *end;
    long pid = strtol(line, &end, 10);
    return pid > 0 && *end == '\n' ? (int)pid : -1;
}

int main(int argc, char **argv) {
    static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP};
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = forward;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
        sigaction(forwarded[i], &action, NULL);
    sigset_t child;
    sigemptyset(&child);
    sigaddset(&child, SIGCHLD);
    sigprocmask(SIG_SETMASK, &child, NULL); /* SIGCHLD taken by sigwait below: none is lost */
    if (argc != 2)
        return 2;
    int ready = atoi(argv[1]);
    if (write(ready, "ready\n", 6) != 6)
        return 1;
    close(ready);
    int pid = read_pid();
    if (pid < 0)
        return 1;
    program = pid;
    /* Children that exited before the pid was known wait as zombies until now; buzz-acp may
     * also become a child only later (its pid comes before the server's intermediate process,
     * its parent until then, has exited). */
    for (;;) {
        int status;
        pid_t ended;
        while ((ended = waitpid(-1, &status, WNOHANG)) > 0)
            if (ended == pid)
                return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
        int signum;
        sigwait(&child, &signum);
    }
}
