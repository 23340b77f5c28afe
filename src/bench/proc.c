/* Process and file helpers of the bench runner: signal handling, running a command, clocks,
 * sparse files, and the machine description of the report. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/run.h"
#include "core/util.h"

volatile sig_atomic_t run_interrupted;
volatile pid_t run_child;

static void run_on_signal(int sig)
{
    (void)sig;
    run_interrupted = 1;
    pid_t p = run_child;
    if (p > 0)
        kill(p, SIGTERM);
}

void run_signals(bool on)
{
    static struct sigaction old_int, old_term, old_pipe;
    if (on) {
        struct sigaction sa = {.sa_handler = run_on_signal}, ign = {.sa_handler = SIG_IGN};
        run_interrupted = 0;
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
        sigaction(SIGPIPE, &ign, &old_pipe);
    } else {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGPIPE, &old_pipe, NULL);
    }
}

/* See run.h: the running binary as a command path. */
int run_self_exe(char *buf, size_t len, char *err, size_t errlen)
{
    static const char self[] = "/proc/self/exe";
    if (access(self, X_OK) != 0) {
        rk_set_err(err, errlen, "cannot find the raidkit binary (%s: %s)", self, strerror(errno));
        return -ENOENT;
    }
    if (len < sizeof(self))
        return -ENAMETOOLONG;
    memcpy(buf, self, sizeof(self));
    return 0;
}

/* Run argv, wait, capture up to outlen-1 bytes of stdout (and stderr when merge). Returns the exit
 * status (0..255), or -errno when it could not run. */
int run_cmd(char *const argv[], char *out, size_t outlen, bool merge)
{
    int pfd[2];
    if (pipe(pfd) < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = -errno;
        close(pfd[0]);
        close(pfd[1]);
        return e;
    }
    if (pid == 0) {
        dup2(pfd[1], 1);
        int dn = open("/dev/null", O_WRONLY);
        dup2(merge ? pfd[1] : dn, 2);
        close(pfd[0]);
        close(pfd[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t n = 0;
    char tmp[4096];
    ssize_t k;
    while ((k = read(pfd[0], tmp, sizeof(tmp))) != 0) {
        if (k < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        size_t c = (size_t)k;
        if (out && n + 1 < outlen) {
            if (c > outlen - 1 - n)
                c = outlen - 1 - n;
            memcpy(out + n, tmp, c);
            n += c;
        }
    }
    close(pfd[0]);
    if (out && outlen)
        out[n] = '\0';
    int st;
    int r = run_child_wait(pid, false, &st);
    return r < 0 ? r : run_exit_code(st);
}

int run_child_wait(pid_t pid, bool stoppable, int *status)
{
    if (stoppable) {
        run_child = pid;
        /* A signal that came before run_child was set found no child to stop. */
        if (run_interrupted)
            kill(pid, SIGTERM);
    }
    int r = 0;
    while (waitpid(pid, status, 0) < 0) {
        if (errno != EINTR) {
            r = -errno;
            break;
        }
    }
    if (stoppable)
        run_child = 0;
    return r;
}

int run_exit_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int run_loop_detach(const char *dev)
{
    char *argv[] = {"losetup", "-d", (char *)dev, NULL};
    run_cmd(argv, NULL, 0, false);
    const char *name = strrchr(dev, '/');
    char path[128];
    snprintf(path, sizeof(path), "/sys/block/%s/loop/backing_file", name ? name + 1 : dev);
    for (int i = 0; i < 100; i++) {
        if (access(path, F_OK) != 0)
            return 0;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    rk_warn("bench: %s is still attached 5 s after losetup -d", dev);
    return -EBUSY;
}

bool run_have_prog(const char *prog)
{
    char *argv[] = {"sh", "-c", NULL, NULL};
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "command -v %s", prog);
    argv[2] = cmd;
    return run_cmd(argv, NULL, 0, false) == 0;
}

void run_now_iso(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void run_chomp(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        s[--n] = '\0';
}

void bench_machine_probe(struct bench_machine *m)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->cpu_model, sizeof(m->cpu_model), "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof(line), f)) {
            if (!strncmp(line, "model name", 10)) {
                char *c = strchr(line, ':');
                if (c) {
                    c++;
                    while (*c == ' ' || *c == '\t')
                        c++;
                    snprintf(m->cpu_model, sizeof(m->cpu_model), "%s", c);
                    run_chomp(m->cpu_model);
                }
                break;
            }
        }
        fclose(f);
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    m->cores = n > 0 ? (int)n : 1;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psz > 0)
        m->memory_bytes = (uint64_t)pages * (uint64_t)psz;
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(m->kernel, sizeof(m->kernel), "%.80s %.40s", u.release, u.machine);
}

double run_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int run_make_file(const char *path, uint64_t size, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
        int e = -errno;
        rk_set_err(err, errlen, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return e;
    }
    close(fd);
    return 0;
}
