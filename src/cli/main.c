/* raidkit command line: dispatch to subcommands (DESIGN §5). */
#include <stdio.h>
#include <string.h>

#include "raidkit/version.h"

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("raidkit %s\n", RK_VERSION_STRING);
        return 0;
    }
    fprintf(stderr, "raidkit: not built yet\n");
    return 2;
}
