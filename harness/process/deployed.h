/* deployed.h - a pipeline the harness does not fork: started, watched,
 * stopped and killed through the drill's `deploy` commands (a Kubernetes
 * deployment, a YARN application, a job submitted to a Spark cluster).
 *
 * The supervisor runs one incarnation of such a pipeline as a follower:
 * this program (`streamdrill _deployed ...`), which runs `deploy start`,
 * takes the last line of its stdout as the deployment's name
 * (`{deployment}` in the other commands), runs `deploy logs` with its
 * output on the follower's own (so batch markers reach the supervisor as
 * from a forked pipeline), and runs `deploy status` every 500 ms: exit 0
 * while the pipeline runs. When status says it ended, the follower waits a
 * second for the logs to deliver its last lines and exits: 0 after a stop,
 * 137 after a kill, 1 when nothing asked it to end (a crash).
 *
 * SIGTERM to the follower runs `deploy stop` (the kill command when there
 * is none), SIGUSR1 runs `deploy kill`; the supervisor sends those for
 * SIGTERM and SIGKILL (supervisor.h). When the harness dies, the follower
 * gets SIGUSR1 (its parent-death signal) and kills the deployment. */
#ifndef SD_DEPLOYED_H
#define SD_DEPLOYED_H

#include "scenario.h" /* SD_DEPLOY_*, sd_deploy_words */

/* The follower's command line: exe _deployed, then for each command given
 * its word, its argument count and its arguments (expanded; a literal
 * "{deployment}" stays for the follower). NULL-terminated, caller frees
 * each string and the array. */
char **sd_deployed_argv(const char *exe, char **const argv[SD_DEPLOY__COUNT], const int argc[SD_DEPLOY__COUNT]);

/* `streamdrill _deployed ...`: args are what follows "_deployed". Returns
 * the exit code. */
int sd_deployed_main(int nargs, char **args);

#endif
