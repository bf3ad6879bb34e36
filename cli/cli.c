/* The onnxio command: dispatch to a verb, global help and version
 * (cli_main; main.c is the program around it). */
#include <stdio.h>
#include <string.h>

#include "common.h"

static const cli_verb *const verbs[] = {&cli_verb_info, &cli_verb_print, &cli_verb_convert,
                                        &cli_verb_bench, &cli_verb_cat, &cli_verb_extract,
                                        &cli_verb_check};
#define VERB_COUNT (sizeof verbs / sizeof verbs[0])

static const char usage_line[] = "usage: onnxio COMMAND [ARGS...]   (see 'onnxio --help')\n";

static void print_help(void)
{
    printf("usage: onnxio COMMAND [ARGS...]\n"
           "       onnxio --help | --version | help [COMMAND]\n"
           "\n"
           "Reads and writes ONNX model files (library version %s).\n"
           "\n"
           "commands:\n",
           onnxio_version());
    for (size_t i = 0; i < VERB_COUNT; i++)
        printf("  %-9s %s\n", verbs[i]->name, verbs[i]->summary);
    printf("\n"
           "Run 'onnxio COMMAND --help' for a command's arguments and options.\n"
           "\n"
           "Exit status: 0 success; 1 invalid input or a failure (a one-line message\n"
           "on stderr); 2 bad usage (unknown command or option, missing argument).\n"
           "A progress line (bytes done and total, rate, time left) is shown on stderr\n"
           "for long steps when it is a terminal; nothing is drawn otherwise.\n");
}

static const cli_verb *find_verb(const char *name)
{
    for (size_t i = 0; i < VERB_COUNT; i++)
        if (strcmp(verbs[i]->name, name) == 0)
            return verbs[i];
    return NULL;
}

static int finish(int status)
{
    return cli_finish_stdout("help", status);
}

int cli_main(int argc, char **argv)
{
    /* A write error on stdout left by an earlier in-process call must not
     * fail this one: cli_finish_stdout reports only this call's errors. */
    clearerr(stdout);
    if (argc < 2) {
        fprintf(stderr, "onnxio: missing command\n%s", usage_line);
        return CLI_EXIT_USAGE;
    }
    const char *first = argv[1];
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0) {
        print_help();
        return finish(CLI_EXIT_OK);
    }
    if (strcmp(first, "--version") == 0 || strcmp(first, "-V") == 0) {
        /* The library actually linked, which is what the command runs. */
        printf("onnxio %s\n", onnxio_version());
        return finish(CLI_EXIT_OK);
    }
    if (strcmp(first, "help") == 0) {
        if (argc == 2) {
            print_help();
            return finish(CLI_EXIT_OK);
        }
        const cli_verb *verb = argc == 3 ? find_verb(argv[2]) : NULL;
        if (!verb) {
            if (argc == 3)
                fprintf(stderr, "onnxio: help: unknown command '%s'\n%s", argv[2], usage_line);
            else
                fprintf(stderr, "onnxio: help: too many arguments\n%s", usage_line);
            return CLI_EXIT_USAGE;
        }
        cli_print_verb_help(verb);
        return finish(CLI_EXIT_OK);
    }
    const cli_verb *verb = find_verb(first);
    if (!verb) {
        if (first[0] == '-')
            fprintf(stderr, "onnxio: unknown option '%s'\n%s", first, usage_line);
        else
            fprintf(stderr, "onnxio: unknown command '%s'\n%s", first, usage_line);
        return CLI_EXIT_USAGE;
    }
    return verb->run(argc - 1, argv + 1);
}
