/* baseagent's command supervisor: every command a run starts runs under one of these.
 *
 *   supervisor LIFELINE_FD STATUS_FD GRACE_MS -- PROGRAM [ARGS...]
 *
 * It is a child subreaper (PR_SET_CHILD_SUBREAPER), so whatever the command starts stays in
 * its subtree even after a double fork or setsid, and it stays alive as long as anything in
 * that subtree does. It reports the command's wait status on STATUS_FD when the command
 * itself exits (its background jobs may live on). It ends its whole subtree:
 *   - on SIGTERM (or SIGINT, SIGHUP): SIGTERM to every descendant, SIGKILL after GRACE_MS;
 *   - on SIGUSR2: SIGKILL to every descendant at once;
 *   - when LIFELINE_FD reaches end of file: the agent died (even by SIGKILL: the kernel
 *     closed its end of the pipe) without releasing it, so SIGKILL to every descendant.
 * SIGUSR1 releases it: the agent finished normally, and background jobs may outlive it.
 * It exits once it has no child left. Only system calls and /proc are used; see
 * supervisor.py for how it is built and tracker use in tools/procs.py.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 65536

static pid_t self_pid, command_pid;
static int status_fd = -1;
static int command_done;
static pid_t pids[MAX_PROCS], ppids[MAX_PROCS];
static char marked[MAX_PROCS];

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Live (non-zombie) descendants of this process, by walking the parent links in /proc. */
static int descendants(pid_t *out, int max) {
    DIR *proc = opendir("/proc");
    if (!proc) return 0;
    int n = 0;
    struct dirent *entry;
    while ((entry = readdir(proc)) && n < MAX_PROCS) {
        char *end;
        long pid = strtol(entry->d_name, &end, 10);
        if (*end || pid <= 0 || pid == self_pid) continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ssize_t got = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (got <= 0) continue;
        buf[got] = 0;
        char *close_paren = strrchr(buf, ')');
        char state;
        int ppid;
        if (!close_paren || sscanf(close_paren + 2, "%c %d", &state, &ppid) != 2) continue;
        if (state == 'Z' || state == 'X') continue;
        pids[n] = (pid_t)pid;
        ppids[n] = (pid_t)ppid;
        marked[n] = 0;
        n++;
    }
    closedir(proc);
    int found = 0, changed = 1;
    while (changed) {
        changed = 0;
        for (int i = 0; i < n; i++) {
            if (marked[i]) continue;
            int mine = ppids[i] == self_pid;
            for (int j = 0; !mine && j < n; j++)
                mine = marked[j] && pids[j] == ppids[i];
            if (mine) {
                marked[i] = 1;
                changed = 1;
                if (found < max) out[found++] = pids[i];
            }
        }
    }
    return found;
}

static void reap(void) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (pid == command_pid && !command_done) {
            command_done = 1;
            if (status_fd >= 0) {
                char line[32];
                int len = snprintf(line, sizeof line, "%d\n", status);
                if (write(status_fd, line, len) < 0) { /* the agent stopped listening */ }
                close(status_fd);
                status_fd = -1;
            }
        }
    }
}

static int signal_tree(int sig) {
    static pid_t found[MAX_PROCS];
    int n = descendants(found, MAX_PROCS);
    for (int i = 0; i < n; i++) kill(found[i], sig);
    return n;
}

/* SIGKILL everything below, again and again, until nothing is left (a process forking
 * while it is being killed leaves orphans, which come back to this subreaper). */
static void kill_tree_now(void) {
    for (int round = 0; round < 1000; round++) {
        if (signal_tree(SIGKILL) == 0) break;
        reap();
        usleep(1000);
    }
    reap();
}

static int no_children_left(void) {
    if (waitpid(-1, NULL, WNOHANG | __WNOTHREAD) == -1 && errno == ECHILD) return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 6 || strcmp(argv[4], "--") != 0) {
        fprintf(stderr, "usage: %s LIFELINE_FD STATUS_FD GRACE_MS -- PROGRAM [ARGS...]\n",
                argv[0]);
        return 127;
    }
    int lifeline = atoi(argv[1]);
    status_fd = atoi(argv[2]);
    long grace_ms = atol(argv[3]);
    self_pid = getpid();
    if (lifeline >= 0) fcntl(lifeline, F_SETFD, FD_CLOEXEC);
    if (status_fd >= 0) fcntl(status_fd, F_SETFD, FD_CLOEXEC);
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

    sigset_t handled, previous;
    sigemptyset(&handled);
    int signals[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2};
    for (unsigned i = 0; i < sizeof signals / sizeof *signals; i++)
        sigaddset(&handled, signals[i]);
    sigprocmask(SIG_BLOCK, &handled, &previous);
    int sfd = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);

    command_pid = fork();
    if (command_pid < 0) {
        perror("supervisor: fork");
        return 127;
    }
    if (command_pid == 0) {
        /* The command starts as if from a fresh shell: no blocked or ignored signals. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int sig = 1; sig < NSIG; sig++)
            if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
        execvp(argv[5], argv + 5);
        fprintf(stderr, "supervisor: cannot run %s: %s\n", argv[5], strerror(errno));
        _exit(127);
    }
    /* The command's output pipe must close when the command's processes close it. */
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
    }

    int detached = lifeline < 0;
    long kill_at = -1;
    for (;;) {
        struct pollfd fds[2] = {{sfd, POLLIN, 0}, {lifeline, POLLIN, 0}};
        int nfds = detached ? 1 : 2;
        int timeout = -1;
        if (kill_at >= 0) {
            long left = kill_at - now_ms();
            timeout = left > 0 ? (int)left : 0;
        }
        if (poll(fds, nfds, timeout) < 0 && errno != EINTR) break;
        /* Signals first: a release (SIGUSR1) is sent before the lifeline is closed. */
        struct signalfd_siginfo info;
        while (read(sfd, &info, sizeof info) == sizeof info) {
            switch (info.ssi_signo) {
            case SIGCHLD:
                break;
            case SIGUSR1:
                detached = 1;
                if (lifeline >= 0) close(lifeline);
                lifeline = -1;
                break;
            case SIGUSR2:
                kill_tree_now();
                break;
            default:  /* SIGTERM, SIGINT, SIGHUP */
                signal_tree(SIGTERM);
                if (kill_at < 0) kill_at = now_ms() + grace_ms;
                break;
            }
        }
        if (!detached && fds[1].revents) {
            char byte;
            if (read(lifeline, &byte, 1) <= 0) {  /* the agent is gone */
                kill_tree_now();
                return 0;
            }
        }
        if (kill_at >= 0 && now_ms() >= kill_at) {
            kill_tree_now();
            kill_at = -1;
        }
        reap();
        if (command_done && no_children_left()) return 0;
    }
    kill_tree_now();
    return 0;
}
