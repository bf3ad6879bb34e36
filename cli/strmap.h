/*
 * A hash map from a pair of byte strings (e.g. domain and op_type, or a
 * tensor name and "") to a number, for counting and indexing in `info`.
 * Keys are not copied: they must outlive the map (they point into the
 * model's arena).
 */
#ifndef ONNXIO_CLI_STRMAP_H
#define ONNXIO_CLI_STRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "onnxio/proto.h"

typedef struct cli_strmap_entry {
    onnxio_string a, b;
    uint64_t value;
    int used;
} cli_strmap_entry;

typedef struct cli_strmap {
    cli_strmap_entry *slots;
    size_t capacity; /* a power of two, or 0 */
    size_t count;
} cli_strmap;

void cli_strmap_init(cli_strmap *m);
void cli_strmap_free(cli_strmap *m);

/* The entry for (a, b), or NULL when there is none. */
cli_strmap_entry *cli_strmap_find(const cli_strmap *m, onnxio_string a, onnxio_string b);
/* The entry for (a, b), added with value `init` when new (*added set to 1).
 * NULL when out of memory. */
cli_strmap_entry *cli_strmap_upsert(cli_strmap *m, onnxio_string a, onnxio_string b,
                                    uint64_t init, int *added);

#endif
