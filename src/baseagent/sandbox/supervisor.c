/* baseagent's command supervisor: every command a run starts runs under one of these.
 *
 *   supervisor [--landlock FD] [--rw FD PATH]... [--ro FD PATH]... [--hide FD PATH]...
 *              [--parent-death PID]
 *              LIFELINE_FD STATUS_FD GRACE_MS -- PROGRAM [ARGS...]
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
 * It exits once it has no child left. LIFELINE_FD -1: no lifeline (--parent-death PID then
 * kills the subtree when the thread that started it ends, for MCP servers whose launcher
 * cannot pass fds). It makes itself non-dumpable, so a process of the same user without
 * CAP_SYS_PTRACE cannot open /proc/<supervisor>/fd (and reopen the lifeline's write end).
 *
 * In a sandbox mode (--landlock given) the command's child, before it executes PROGRAM:
 *   - gets its own mount namespace (a user namespace too when it is not root, where the
 *     kernel allows it) in which every mount is read-only but the --rw directories (each
 *     re-opened by its path and used only if it is still the directory the agent opened,
 *     FD), with the --ro paths inside them (.git) read-only again and an empty read-only
 *     tmpfs over each --hide directory (the agent's own, where a writable root holds it);
 *   - drops every capability (bounding, ambient, effective, permitted, inheritable);
 *   - restricts itself with the run's Landlock ruleset FD, which also scopes signals and
 *     abstract sockets to the command's own domain: the supervisor, outside it, cannot be
 *     signalled, traced or inspected by the command.
 *
 *   supervisor --watchdog PID GRACE_MS
 *
 * is the agent's signal watchdog instead (signals.py): it reads its stdin, the write end of
 * which is the agent's signal wakeup fd. A byte other than 0xFF is a signal the agent
 * received (written by the C-level handler, whatever Python is doing); 0xFF is the agent's
 * Python handler saying it runs. A signal not answered within GRACE_MS (a thread holds the
 * GIL in a long C call), or a second one before the first was answered, gets PID SIGKILLed.
 * It exits when stdin reaches end of file (the agent is gone or done).
 *
 * It runs from a sealed memfd (/proc/self/fd/N) holding bytes the agent built or verified
 * against their recorded SHA-256, never from a path a command could write; it marks every
 * fd above 2 close-on-exec first, so the command inherits none of them (that memfd
 * included). Only system calls and /proc are used; see supervisor.py for how it is built
 * and held, and sandbox/policy.py and tools/procs.py for how it is used.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 65536
#define MAX_PATHS 64

/* The new mount API and openat2, defined here so that older C library headers (and the
 * <linux/mount.h> vs <sys/mount.h> clash of glibc before 2.36) do not matter. These system
 * calls came after the numbering was unified: the same numbers on every architecture. */
#define NR_open_tree 428
#define NR_move_mount 429
#define NR_openat2 437
#define NR_mount_setattr 442
#define NR_fsopen 430
#define NR_fsconfig 431
#define NR_fsmount 432
#define FSCONFIG_CMD_CREATE_ 6
#define NR_landlock_restrict_self 446
#define NR_close_range 436
#define CLOSE_RANGE_CLOEXEC_ 4
#define OPEN_TREE_CLONE_ 1
#define MOVE_MOUNT_F_EMPTY_PATH_ 0x00000004
#define MOVE_MOUNT_T_EMPTY_PATH_ 0x00000040
#define MOUNT_ATTR_RDONLY_ 0x00000001
#define RESOLVE_NO_MAGICLINKS_ 0x02
#define RESOLVE_NO_SYMLINKS_ 0x04
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
struct open_how_ { unsigned long long flags, mode, resolve; };
struct mount_attr_ { unsigned long long attr_set, attr_clr, propagation, userns_fd; };

struct held { int fd; const char *path; };
static struct held rw_paths[MAX_PATHS], ro_paths[MAX_PATHS], hidden_paths[MAX_PATHS];
static int n_rw, n_ro, n_hidden, landlock_fd = -1;

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


/* -- the command's confinement (its child only, before exec) ------------------------- */

static void fail(const char *what) {
    fprintf(stderr, "supervisor: cannot confine the command (%s): %s\n", what, strerror(errno));
    _exit(126);
}

static void write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, text, strlen(text)) < 0) fail(path);
    close(fd);
}

static int same_inode(int a, int b) {
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* `path` opened afresh without following any symlink, if it is still what `held` holds. */
static int reopen(const struct held *held) {
    struct open_how_ how = {.flags = O_PATH | O_CLOEXEC,
                            .resolve = RESOLVE_NO_SYMLINKS_ | RESOLVE_NO_MAGICLINKS_};
    int fd = (int)syscall(NR_openat2, AT_FDCWD, held->path, &how, sizeof how);
    if (fd >= 0 && !same_inode(fd, held->fd)) {
        close(fd);
        return -1;
    }
    return fd;
}

static int clone_tree(int fd) {
    return (int)syscall(NR_open_tree, fd, "",
                        OPEN_TREE_CLONE_ | O_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
}

static int attach(int tree, int onto) {
    return (int)syscall(NR_move_mount, tree, "", onto, "",
                        MOVE_MOUNT_F_EMPTY_PATH_ | MOVE_MOUNT_T_EMPTY_PATH_);
}

static int set_read_only(int dfd, const char *path, unsigned flags) {
    struct mount_attr_ attr = {.attr_set = MOUNT_ATTR_RDONLY_};
    return (int)syscall(NR_mount_setattr, dfd, path, flags | AT_RECURSIVE, &attr, sizeof attr);
}

/* An empty read-only tmpfs over the directory `fd` holds: what was in it is out of view. */
static int hide(int fd) {
    int fs = (int)syscall(NR_fsopen, "tmpfs", 1 /* FSOPEN_CLOEXEC */);
    if (fs < 0) return -1;
    int mnt = -1, ok = -1;
    if (syscall(NR_fsconfig, fs, FSCONFIG_CMD_CREATE_, NULL, NULL, 0) == 0)
        mnt = (int)syscall(NR_fsmount, fs, 1 /* FSMOUNT_CLOEXEC */, MOUNT_ATTR_RDONLY_);
    if (mnt >= 0) ok = attach(mnt, fd);
    if (mnt >= 0) close(mnt);
    close(fs);
    return ok;
}

/* A mount namespace where everything is read-only but the writable roots (.git in them
 * read-only again). Returns 0 without changing anything when the kernel does not let this
 * process have a mount namespace (not root, no user namespaces): Landlock alone binds it. */
static int isolate_mounts(void) {
    for (int i = 0; i < n_rw; i++)
        if (strcmp(rw_paths[i].path, "/") == 0) return 0;  /* everything is writable */
    uid_t uid = geteuid();
    gid_t gid = getegid();
    char cwd[PATH_MAX];
    int have_cwd = getcwd(cwd, sizeof cwd) != NULL;
    int old_cwd = open(".", O_PATH | O_CLOEXEC);
    if (unshare(CLONE_NEWNS) != 0) {
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
            if (old_cwd >= 0) close(old_cwd);
            return 0;
        }
        char map[64];
        write_file("/proc/self/setgroups", "deny");
        snprintf(map, sizeof map, "%u %u 1\n", uid, uid);
        write_file("/proc/self/uid_map", map);
        snprintf(map, sizeof map, "%u %u 1\n", gid, gid);
        write_file("/proc/self/gid_map", map);
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0) fail("mount --make-rslave /");
    int trees[MAX_PATHS], targets[MAX_PATHS], n = 0;
    for (int i = 0; i < n_rw; i++) {
        int fd = reopen(&rw_paths[i]);
        if (fd < 0) continue;  /* renamed or swapped for something else: not writable */
        int tree = clone_tree(fd);
        if (tree < 0) fail(rw_paths[i].path);
        trees[n] = tree;
        targets[n++] = fd;
    }
    if (set_read_only(AT_FDCWD, "/", 0) != 0) fail("read-only /");
    for (int i = 0; i < n; i++) {
        if (attach(trees[i], targets[i]) != 0) fail("bind a writable root");
        close(trees[i]);
        close(targets[i]);
    }
    for (int i = 0; i < n_hidden; i++) {
        int fd = reopen(&hidden_paths[i]);
        if (fd < 0) continue;
        if (hide(fd) != 0) fail(hidden_paths[i].path);
        close(fd);
    }
    for (int i = 0; i < n_ro; i++) {
        int fd = reopen(&ro_paths[i]);
        if (fd < 0) continue;
        int tree = clone_tree(fd);
        if (tree < 0 || set_read_only(tree, "", AT_EMPTY_PATH) != 0 || attach(tree, fd) != 0)
            fail(ro_paths[i].path);
        close(tree);
        close(fd);
    }
    /* Back into the working directory as the new mounts show it. */
    if (have_cwd && old_cwd >= 0) {
        struct held here = {old_cwd, cwd};
        int fd = reopen(&here);
        if (fd >= 0) {
            if (fchdir(fd) != 0) fail("chdir");
            close(fd);
        }
    }
    if (old_cwd >= 0) close(old_cwd);
    return 0;
}

static void drop_capabilities(void) {
    for (int cap = 0; cap < 64; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL) break;
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capset, &header, data) != 0) fail("capset");
}

static void confine_command(void) {
    if (landlock_fd < 0) return;  /* danger-full-access */
    /* The supervisor is non-dumpable, which makes /proc/self of this child root's: a user
     * namespace's maps could not be written. The exec below resets it anyway. */
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("no_new_privs");
    isolate_mounts();
    drop_capabilities();
    if (syscall(NR_landlock_restrict_self, landlock_fd, 0) != 0) fail("landlock");
}

static int parse_held(char **argv, int i, int argc, struct held *list, int *count) {
    if (i + 2 >= argc || *count >= MAX_PATHS) return -1;
    list[*count].fd = atoi(argv[i + 1]);
    list[*count].path = argv[i + 2];
    fcntl(list[*count].fd, F_SETFD, FD_CLOEXEC);
    (*count)++;
    return i + 3;
}

static void close_held(void) {
    for (int i = 0; i < n_rw; i++) close(rw_paths[i].fd);
    for (int i = 0; i < n_ro; i++) close(ro_paths[i].fd);
    for (int i = 0; i < n_hidden; i++) close(hidden_paths[i].fd);
    if (landlock_fd >= 0) close(landlock_fd);
}

static int watchdog(pid_t agent, long grace_ms) {
    long deadline = -1;
    for (;;) {
        struct pollfd fd = {0, POLLIN, 0};
        long left = deadline < 0 ? -1 : deadline - now_ms();
        int ready = poll(&fd, 1, deadline < 0 ? -1 : (int)(left > 0 ? left : 0));
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) {  /* a signal went unanswered: the agent cannot run Python */
            kill(agent, SIGKILL);
            return 0;
        }
        unsigned char bytes[64];
        ssize_t got = read(0, bytes, sizeof bytes);
        if (got <= 0) return 0;
        for (ssize_t k = 0; k < got; k++) {
            if (bytes[k] == 0xFF) {
                deadline = -1;
            } else if (deadline >= 0) {
                kill(agent, SIGKILL);
                return 0;
            } else {
                deadline = now_ms() + grace_ms;
            }
        }
    }
}

int main(int argc, char **argv) {
    /* Every fd the agent passed (the memfd this program runs from among them) is for this
     * process alone: none reaches the command. Those it needs are read before any exec. */
    syscall(NR_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC_);
    if (argc == 4 && strcmp(argv[1], "--watchdog") == 0)
        return watchdog((pid_t)atol(argv[2]), atol(argv[3]));
    int i = 1;
    pid_t watched_parent = 0;
    while (i < argc && strncmp(argv[i], "--", 2) == 0 && argv[i][2]) {
        if (strcmp(argv[i], "--landlock") == 0 && i + 1 < argc) {
            landlock_fd = atoi(argv[i + 1]);
            fcntl(landlock_fd, F_SETFD, FD_CLOEXEC);
            i += 2;
        } else if (strcmp(argv[i], "--rw") == 0) {
            i = parse_held(argv, i, argc, rw_paths, &n_rw);
        } else if (strcmp(argv[i], "--ro") == 0) {
            i = parse_held(argv, i, argc, ro_paths, &n_ro);
        } else if (strcmp(argv[i], "--hide") == 0) {
            i = parse_held(argv, i, argc, hidden_paths, &n_hidden);
        } else if (strcmp(argv[i], "--parent-death") == 0 && i + 1 < argc) {
            watched_parent = (pid_t)atol(argv[i + 1]);
            i += 2;
        } else {
            i = -1;
        }
        if (i < 0) break;
    }
    if (i < 0 || argc - i < 5 || strcmp(argv[i + 3], "--") != 0) {
        fprintf(stderr, "usage: %s [--landlock FD] [--rw FD PATH]... [--ro FD PATH]... [--hide FD PATH]... "
                "[--parent-death PID] LIFELINE_FD STATUS_FD GRACE_MS -- PROGRAM [ARGS...]\n",
                argv[0]);
        return 127;
    }
    int lifeline = atoi(argv[i]);
    status_fd = atoi(argv[i + 1]);
    long grace_ms = atol(argv[i + 2]);
    char **program = argv + i + 4;
    self_pid = getpid();
    /* No process of this user without CAP_SYS_PTRACE may open /proc/<self>/fd. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
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
    if (watched_parent > 0) {
        /* The thread that started it ends (the agent died): SIGUSR2, kill the subtree. */
        prctl(PR_SET_PDEATHSIG, SIGUSR2, 0, 0, 0);
        if (getppid() != watched_parent) kill(self_pid, SIGUSR2);
    }

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
        confine_command();
        execvp(program[0], program);
        fprintf(stderr, "supervisor: cannot run %s: %s\n", program[0], strerror(errno));
        _exit(127);
    }
    close_held();
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
