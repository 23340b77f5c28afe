/* --json refusals: with --json, a command that refuses or fails still prints one JSON document on
 * stdout, so a script can always parse it (docs/CLI.md, the introduction). main.c brackets every
 * command with cli_json_begin / cli_json_end; the commands themselves need not know. */
#ifndef RK_CLI_JSON_REFUSAL_H
#define RK_CLI_JSON_REFUSAL_H

/*
 * Before running command (its words, e.g. "scrub" or "cache create"; kept, not copied) with its
 * arguments argv[0..argc-1] (argv[0] the command word): when they hold --json (or -j), stdout is
 * held in memory until cli_json_end and every line written to stderr is still written to fd 2 at
 * once and also remembered. Without --json nothing changes. Returns 0, or -errno when the
 * streams cannot be wrapped (the command then runs unwrapped).
 */
int cli_json_begin(const char *command, int argc, char **argv);

/*
 * After the command returned rc (its exit status). With --json: when rc is 0, or the held stdout
 * is exactly one JSON document that is not a refusal (info's description with exit 1), it is
 * written to stdout unchanged. Every other failure prints the one refusal shape
 * {"ok": false, "error": {"code": rc, "message": M, "command": C}}: a held server refusal
 * {"ok": false, "error": "M", ...} is converted (its other members kept); otherwise the held
 * text (usage, plain lines) is dropped and M is the command's one-line error from stderr without
 * its "raidkit CMD: " prefix. C is the command words given to cli_json_begin. Returns rc.
 * Without --json: returns rc.
 */
int cli_json_end(int rc);

#endif
