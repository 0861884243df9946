/* links.c - the cluster's inter-broker links through proxies that can be
 * cut (links.h). */
#include "links.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy.h"
#include "util.h"

#define SD_LINKS_MAX 64

/* The inode of the socket whose local port is lport and remote port rport,
 * from one of /proc/net/tcp, /proc/net/tcp6; 0 when none. */
static unsigned long sd_links_inode(const char *table, int lport, int rport) {
    FILE *f = fopen(table, "r");
    if (!f) return 0;
    char line[512];
    unsigned long found = 0;
    if (!fgets(line, sizeof(line), f)) { fclose(f); return 0; } /* the header */
    while (!found && fgets(line, sizeof(line), f)) {
        char local[128], remote[128];
        unsigned long inode = 0;
        /* sl local rem st tx:rx tr:when retr uid timeout inode */
        if (sscanf(line, " %*s %127s %127s %*s %*s %*s %*s %*s %*s %lu", local, remote, &inode) != 3) continue;
        const char *lc = strrchr(local, ':'), *rc = strrchr(remote, ':');
        if (!lc || !rc) continue;
        if ((int)strtol(lc + 1, NULL, 16) == lport && (int)strtol(rc + 1, NULL, 16) == rport) found = inode;
    }
    fclose(f);
    return found;
}

/* Does pid hold socket inode? */
static int sd_links_holds(int pid, unsigned long inode) {
    char dir[64], want[64];
    snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
    snprintf(want, sizeof(want), "socket:[%lu]", inode);
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int held = 0;
    while (!held && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[320], target[64];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n <= 0) continue;
        target[n] = 0;
        held = !strcmp(target, want);
    }
    closedir(d);
    return held;
}

static int sd_links_port(const struct sockaddr_storage *a) {
    if (a->ss_family == AF_INET) return ntohs(((const struct sockaddr_in *)a)->sin_port);
    if (a->ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
    return -1;
}

/* sd_links_who, and the two ports it read (-1: unknown) */
static int sd_links_who_ports(int fd, const int *ids, const int *pids, int n, int *lport_out, int *pport_out) {
    struct sockaddr_storage peer, self;
    socklen_t pl = sizeof(peer), sl = sizeof(self);
    *lport_out = *pport_out = -1;
    if (getpeername(fd, (struct sockaddr *)&peer, &pl) || getsockname(fd, (struct sockaddr *)&self, &sl)) return 0;
    int pport = sd_links_port(&peer), lport = sd_links_port(&self);
    *lport_out = lport;
    *pport_out = pport;
    if (pport < 0 || lport < 0) return 0;
    /* the connecting side's socket: its local port is our peer's, its
     * remote port our own (a JVM's sockets are in tcp6) */
    unsigned long inode = sd_links_inode("/proc/net/tcp", pport, lport);
    if (!inode) inode = sd_links_inode("/proc/net/tcp6", pport, lport);
    if (!inode) return 0;
    for (int i = 0; i < n; i++)
        if (pids[i] > 0 && sd_links_holds(pids[i], inode)) return ids[i];
    return 0;
}

int sd_links_who(int fd, const int *ids, const int *pids, int n) {
    int lport, pport;
    return sd_links_who_ports(fd, ids, pids, n, &lport, &pport);
}

int64_t sd_links_read_cut(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int64_t mask = 0;
    char word[32];
    while (mask >= 0 && fscanf(f, "%31s", word) == 1) {
        char *end;
        long id = strtol(word, &end, 10);
        if (*end || id < 1 || id > 31) mask = -1;
        else mask |= (int64_t)1 << id;
    }
    fclose(f);
    return mask;
}

typedef struct {
    int n;
    int ids[SD_LINKS_MAX];
    char *pidfiles[SD_LINKS_MAX];
} sd_links_brokers_t;

/* the tagger of every proxy: which broker connected */
static int sd_links_tag(int fd, void *opaque) {
    const sd_links_brokers_t *b = opaque;
    int pids[SD_LINKS_MAX];
    for (int i = 0; i < b->n; i++) {
        pids[i] = -1;
        FILE *f = fopen(b->pidfiles[i], "r");
        if (f) {
            if (fscanf(f, "%d", &pids[i]) != 1) pids[i] = -1;
            fclose(f);
        }
    }
    int lport, pport, who = sd_links_who_ports(fd, b->ids, pids, b->n, &lport, &pport);
    /* the record of who opened what (links.log) */
    if (who) fprintf(stderr, "%lld port %d: a connection from broker %d (port %d)\n", (long long)sd_util_wall_ms(), lport, who, pport);
    else fprintf(stderr, "%lld port %d: a connection from port %d, of no broker it knows\n", (long long)sd_util_wall_ms(), lport, pport);
    fflush(stderr);
    return who;
}

static volatile sig_atomic_t sd_links_stop;
static void sd_links_on_signal(int sig) { (void)sig; sd_links_stop = 1; }

void sd_links_ids(uint32_t mask, char *out, size_t olen) {
    size_t l = 0;
    out[0] = 0;
    for (int id = 1; id < 32 && l < olen; id++)
        if ((mask >> id) & 1u) l += (size_t)snprintf(out + l, olen - l, "%s%d", l ? " " : "", id);
}

/* Write the ids of mask to path, through a rename (a reader never sees half). */
static void sd_links_write_ids(const char *path, int64_t mask) {
    char tmp[4200], ids[128];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    sd_links_ids((uint32_t)mask, ids, sizeof(ids));
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    fprintf(f, "%s\n", ids);
    if (fclose(f) == 0) rename(tmp, path);
}

int sd_links_main(int argc, char **argv) {
    if (argc != 1) {
        fprintf(stderr, "usage: streamdrill _links DIR (started by kafka.sh cluster)\n");
        return 2;
    }
    const char *dir = argv[0];
    char path[4096], cut[4096], done[4096], ownerp[4096];
    snprintf(path, sizeof(path), "%s/links", dir);
    snprintf(cut, sizeof(cut), "%s/cut", dir);
    snprintf(done, sizeof(done), "%s/cut.done", dir);
    snprintf(ownerp, sizeof(ownerp), "%s/owner", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "streamdrill _links: %s: %s\n", path, strerror(errno));
        return 2;
    }
    static sd_links_brokers_t brokers;
    sd_proxy_t *px[SD_LINKS_MAX];
    int np = 0, lineno = 0, bad = 0;
    char line[4600];
    while (!bad && fgets(line, sizeof(line), f)) {
        lineno++;
        char word[16], a[4200], b[4200] = "";
        int id;
        if (line[0] == '#' || sscanf(line, "%15s", word) != 1) continue;
        if (!strcmp(word, "broker") && sscanf(line, "%*s %d %4199s", &id, a) == 2 && brokers.n < SD_LINKS_MAX && id > 0 && id < 32) {
            brokers.ids[brokers.n] = id;
            brokers.pidfiles[brokers.n++] = sd_util_strdup(a);
        } else if (!strcmp(word, "link") && sscanf(line, "%*s %d %4199s", &id, a) == 2 && np < SD_LINKS_MAX && id > 0 && id < 32 &&
                   strchr(a, '=')) {
            char *eq = strchr(a, '=');
            *eq = 0;
            snprintf(b, sizeof(b), "%s", eq + 1);
            char err[256];
            if (sd_proxy_start(a, b, &px[np], err, sizeof(err))) {
                fprintf(stderr, "streamdrill _links: %s:%d: %s\n", path, lineno, err);
                bad = 1;
            } else {
                sd_proxy_tagger(px[np++], id, sd_links_tag, &brokers);
            }
        } else {
            fprintf(stderr, "streamdrill _links: %s:%d: expected `broker ID PIDFILE` or `link ID LISTEN=UPSTREAM` (ids 1 to 31), found %s",
                    path, lineno, line);
            bad = 1;
        }
    }
    fclose(f);
    int owner = 0;
    FILE *o = fopen(ownerp, "r");
    if (o) {
        if (fscanf(o, "%d", &owner) != 1) owner = 0;
        fclose(o);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = sd_links_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    int64_t applied = -1;
    for (int tick = 0; !bad && !sd_links_stop; tick++) {
        int64_t want = sd_links_read_cut(cut);
        if (want >= 0 && want != applied) {
            for (int i = 0; i < np; i++) sd_proxy_cut(px[i], (uint32_t)want);
            applied = want;
            fprintf(stderr, "%lld cut: mask %#llx\n", (long long)sd_util_wall_ms(), (unsigned long long)want);
            fflush(stderr);
            sd_links_write_ids(done, want);
        }
        if (owner > 0 && tick % 20 == 0 && kill(owner, 0) && errno == ESRCH) break;
        usleep(50 * 1000);
    }
    for (int i = 0; i < np; i++) sd_proxy_stop(px[i]);
    for (int i = 0; i < brokers.n; i++) free(brokers.pidfiles[i]);
    return bad ? 2 : 0;
}
