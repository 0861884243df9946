/* links.h - the links between the brokers of a cluster, through proxies
 * the harness can cut: `streamdrill _links DIR`, started by `kafka.sh
 * cluster` before its brokers and living as long as they do.
 *
 * Each broker advertises its inter-broker and controller listeners at a
 * proxy's port, so every byte one broker sends another goes through a
 * proxy. DIR/links says which:
 *
 *   broker ID PIDFILE           one per broker: its node id and pid file
 *   link ID LISTEN=UPSTREAM     a proxy in front of a listener of broker ID
 *
 * A proxy tells which broker opened a connection by the socket's owner
 * (/proc/net/tcp and each broker's /proc/PID/fd). Cutting broker K off
 * (`broker isolate`) holds every connection K opened to the others and
 * every one opened to K, while K's client listener stays reachable: a
 * broker cut off from its cluster that clients still talk to.
 *
 * The cut is asked for through a file: the harness writes the ids to cut
 * off (space separated; none: empty) to DIR/cut, and the daemon, within
 * 50 ms, applies them and writes the same ids to DIR/cut.done. The daemon
 * ends on SIGTERM or when the process in DIR/owner has ended. */
#ifndef SD_LINKS_H
#define SD_LINKS_H

#include <stddef.h>
#include <stdint.h>

/* streamdrill _links DIR: exit status 0 on SIGTERM or the owner's end, 2
 * on a DIR/links it cannot use (the cause on stderr). */
int sd_links_main(int argc, char **argv);

/* Which of n processes (pids[i], id ids[i]) opened the TCP connection
 * accepted as fd; 0 when none of them did or it cannot be told. */
int sd_links_who(int fd, const int *ids, const int *pids, int n);

/* The ids of mask (bit K for broker K), "1 3", into out ("" for none). */
void sd_links_ids(uint32_t mask, char *out, size_t olen);

/* Read a cut file ("1 3\n") into a mask (bit K for broker K); -1 when the
 * file holds something else than ids from 1 to 31. A missing file is 0. */
int64_t sd_links_read_cut(const char *path);

#endif
