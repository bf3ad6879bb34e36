/*
 * Shared pieces of the onnxio command: the verb table, option parsing, the
 * exit-status rules, error messages, and model loading/saving with a
 * progress indicator.
 *
 * Exit status of every verb: 0 success; 1 invalid input or a failure, with a
 * one-line message `onnxio: VERB: FILE: reason` on stderr; 2 bad usage
 * (unknown verb or option, missing or extra argument) with a usage line on
 * stderr.
 */
#ifndef ONNXIO_CLI_COMMON_H
#define ONNXIO_CLI_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "onnxio/onnxio.h"
#include "port.h"

enum { CLI_EXIT_OK = 0, CLI_EXIT_FAILURE = 1, CLI_EXIT_USAGE = 2 };

/* One verb of the command (`onnxio VERB ...`). */
typedef struct cli_verb {
    const char *name;
    const char *summary; /* one line, for `onnxio --help` */
    const char *usage;   /* the synopsis: "onnxio info MODEL [--json]" */
    const char *help;    /* the rest of `onnxio VERB --help` */
    /* argv[0] is the verb name; returns the exit status. */
    int (*run)(int argc, char **argv);
    /* NULL, or more help printed after `help` (C compilers need only take
     * a string literal of 4095 bytes). */
    const char *help_more;
} cli_verb;

/* The whole command, as main() runs it: `argv[0]` is the program name,
 * argv[1] the verb (or --help, --version, help). Returns the exit status
 * (0, 1 or 2 as above) and never exits, so that it can also be called
 * in-process (tests/fuzz/fuzz_cli.c): nothing it allocates or sets survives
 * the call, and it installs no signal handlers (main.c does). Writes to
 * stdout and stderr. */
int cli_main(int argc, char **argv);

extern const cli_verb cli_verb_info;
extern const cli_verb cli_verb_print;
extern const cli_verb cli_verb_convert;
extern const cli_verb cli_verb_bench;
extern const cli_verb cli_verb_cat;
extern const cli_verb cli_verb_extract;
extern const cli_verb cli_verb_check;

/* Writes `onnxio VERB --help` to stdout. */
void cli_print_verb_help(const cli_verb *verb);

/* ---- options --------------------------------------------------------- */

/* A long option `--name` (also `--name=value` when it takes a value). */
typedef struct cli_option {
    const char *name;   /* without the leading "--" */
    const char **value; /* options taking a value: where it is stored */
    int *flag;          /* flags: set to 1 when given */
} cli_option;

/* Parses argv[1..argc) of `verb`: options from `opts` anywhere on the line,
 * `--help`/`-h`, `--` ending the options; the other words are positional
 * arguments, stored in pos[0..*npos). Returns -1 when the verb should go on,
 * or the exit status to return at once: 0 after printing the help, 2 after
 * a usage error (unknown option, missing value, fewer than min_pos or more
 * than max_pos positional arguments). */
int cli_parse_args(const cli_verb *verb, int argc, char **argv, const cli_option *opts,
                   size_t opt_count, char **pos, size_t min_pos, size_t max_pos, size_t *npos);

/* Prints `onnxio: VERB: message` and the verb's usage line on stderr;
 * returns 2. */
int cli_usage_error(const cli_verb *verb, const char *fmt, ...)
#if defined(__GNUC__)
    CLI_PRINTF(2, 3)
#endif
    ;

/* Prints `onnxio: VERB: FILE: onnxio_last_error()` on stderr; returns 1. */
int cli_fail(const char *verb, const char *file);
/* The same, with `hint` (NULL: none) after the library's message, on the
 * same line. */
/* cli_fail with `error`, a library error message kept from another thread
 * (onnxio_last_error is the calling thread's), in place of the last one. */
int cli_fail_error(const char *verb, const char *file, const char *error);
int cli_fail_hint(const char *verb, const char *file, const char *hint);
/* After a successful load of `path` as `msg`: a note on stderr when the
 * file is empty (it reads as an empty message of any type), and, when
 * `type_guessed` (no --type: read as a ModelProto), when the message's top
 * level holds fields a ModelProto does not have (another message's file). */
void cli_note_load(const char *verb, const char *path, const void *msg, bool type_guessed);
/* Prints `onnxio: VERB: FILE: message` on stderr; returns 1. */
int cli_fail_msg(const char *verb, const char *file, const char *fmt, ...)
#if defined(__GNUC__)
    CLI_PRINTF(3, 4)
#endif
    ;

/* Flushes stdout; on a write error prints `onnxio: VERB: <stdout>: ...` and
 * returns 1, else returns `status`. */
int cli_finish_stdout(const char *verb, int status);

/* Makes room for one more element in a malloc'd array of `count` of
 * `*capacity` elements of `elem` bytes (doubling, from 8). 0, or -1 when
 * out of memory (the array is unchanged). */
int cli_grow(void **array, size_t *capacity, size_t count, size_t elem);

/* ---- numbers and sizes ----------------------------------------------- */

/* Parses the value of `--max-expansion N` (onnxio_parse_options.max_expansion:
 * 0 means the library's default) into *out, which stays as it is when
 * `text` is NULL (the option was not given). Returns -1 when the verb
 * should go on, or 2 after a usage error. */
int cli_parse_max_expansion(const cli_verb *verb, const char *text, uint64_t *out);

/* Parses the value of `--threads N` (0 to 1024; 0: one per core) into
 * *out, which is 0 when `text` is NULL (the option was not given). Returns
 * -1 when the verb should go on, or 2 after a usage error. */
int cli_parse_threads(const cli_verb *verb, const char *text, int *out);

/* The text of a macro's value: CLI_STR(ONNXIO_DEFAULT_MAX_EXPANSION) is
 * "100", for help texts that quote a library default. */
#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)

/* Parses a byte count: digits with an optional K, M or G suffix (powers of
 * 1024, an optional "iB"/"B" after it). Returns 0 on success, -1 when the
 * text is not such a number or overflows. */
int cli_parse_size(const char *text, uint64_t *out);

/* "512 B", "1.5 KiB", "12.0 MiB", ... into buf (at least 32 bytes). */
const char *cli_human_size(uint64_t bytes, char *buf, size_t buf_size);

/* ---- strings of a model ---------------------------------------------- */

/* Compares two onnxio_strings as memcmp would, shorter first on a common
 * prefix. An unset field is {NULL, 0}: never passed to memcmp, since even
 * memcmp(NULL, p, 0) is undefined behaviour. */
int cli_string_cmp(onnxio_string a, onnxio_string b);
/* 1 when `s` holds exactly the bytes of the C string `text`. */
int cli_string_is(onnxio_string s, const char *text);
/* Writes `s` to `out` as it is, except control characters (below 0x20,
 * and 0x7F), written as \xNN so that a name cannot drive the terminal. */
void cli_put_escaped(FILE *out, onnxio_string s);

/* ---- models ---------------------------------------------------------- */

/* Whether the file at `path` is an .onnxz archive by its first bytes, the
 * test onnxio_load_model makes (onnxio_detect_file_format): 1 or 0, or -1
 * when the file cannot be examined (missing, not a regular file;
 * onnxio_last_error() says why). */
int cli_file_is_archive(const char *path);
/* Whether `path` is an empty regular file: protobuf reads one as an empty
 * message, which no verb has anything to do with (most often a failed
 * download or write), so every verb refuses it before it loads; the next
 * cli_fail says so. */
bool cli_file_is_empty(const char *path);
/* The command's one load: the library's onnxio_load_file (a message of
 * type `desc`, a ModelProto for &onnxio_desc_ModelProto), which reads
 * every format (binary protobuf, .onnxz archives, protobuf text format,
 * JSON, ONNX's textual syntax: onnxio_detect_kind) and a model's external
 * data, with `opts` as given. With `progress`, a progress indicator
 * ("loading FILE") on stderr when it is a terminal: all it adds. */
onnxio_status cli_load(const onnxio_message_desc *desc, const char *path, const onnxio_parse_options *opts,
                       bool progress, onnxio_arena *arena, void **out);
/* The structure of the model at `path` for a verb that examines it (info,
 * check): payload sizes kept, nothing copied, external data left external;
 * an .onnxz archive (by its content) is opened and validated too
 * (*archive; NULL for other files). On failure the error is reported for
 * `verb` and CLI_EXIT_FAILURE returned, nothing left to free; else
 * CLI_EXIT_OK, and the caller unrefs *arena and closes *archive. */
int cli_load_structure(const char *verb, const char *path, uint64_t max_expansion, onnxio_arena **arena,
                       onnxio_ModelProto **model, onnxio_archive **archive);
/* onnxio_save_model with a progress indicator ("saving FILE") on stderr
 * when it is a terminal. */
onnxio_status cli_save_model(onnxio_ModelProto *model, const char *path,
                             const onnxio_serialize_options *opts);
/* The same, with `gate` (not NULL) called once, on this thread, after
 * everything is written and before any file is replaced (the save's last
 * progress call): non-zero cancels the save (ONNXIO_ERR_CANCELLED), which
 * leaves every existing file as it was. */
onnxio_status cli_save_model_gated(onnxio_ModelProto *model, const char *path, const onnxio_serialize_options *opts,
                                   int (*gate)(void *user), void *gate_user);
/* The directory in which a load of the model file at `model_path` looks
 * up its external data: the library's onnxio_model_dir (`base_dir` when
 * not NULL, else the directory of `model_path`), malloc'd; NULL when out
 * of memory. */
char *cli_model_dir(const char *model_path, const char *base_dir);

#endif
