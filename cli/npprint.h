/* Values printed as numpy's str(array) prints them (numpy's default print
 * options: shortest round-trip digits, columns aligned, arrays of more than
 * 1000 elements summarised with '...' and 3 items at each edge, lines
 * wrapped at 75 columns). */
#ifndef ONNXIO_CLI_NPPRINT_H
#define ONNXIO_CLI_NPPRINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <onnxio/onnxio.h>

/* Prints the array of data type `dt` (numpy's types as numpy prints them,
 * those numpy has only through ml_dtypes as ml_dtypes prints them; STRING:
 * `strings` then holds the elements, `data` is unused) of shape `shape`
 * (`rank` axes; rank 0: a scalar, printed as str(scalar)), its elements
 * little-endian in row-major order at `data`, and a newline. Returns 0, or
 * -1 when `dt` has no rendering here (nothing printed) or memory runs out. */
int cli_np_print(FILE *out, int32_t dt, const uint8_t *data, const onnxio_string *const *strings, const int64_t *shape,
                 size_t rank);

/* Whether cli_np_print renders data type `dt`: every one the library's
 * table (onnxio_data_type_info) knows. */
int cli_np_prints(int32_t dt);

#endif
