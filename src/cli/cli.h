/* Subcommands of the raidkit command line; each takes the argv shifted so that argv[0] is the
 * command name, and returns the process exit status (0 ok, 1 failure, 2 usage error). */
#ifndef RK_CLI_H
#define RK_CLI_H

#define CLI_EXIT_OK    0
#define CLI_EXIT_FAIL  1
#define CLI_EXIT_USAGE 2

int cli_create(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_bitmap(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_status(int argc, char **argv);
int cli_fail(int argc, char **argv);
int cli_replace(int argc, char **argv);
int cli_scrub(int argc, char **argv);
int cli_assemble(int argc, char **argv);

#endif
