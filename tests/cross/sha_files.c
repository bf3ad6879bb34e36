/* Prints, for each file named on the command line, its SHA-1 and SHA-256
 * as onnxio computes them with each of its engines: "ENGINE SHA1 SHA256
 * PATH" a line. tests/python/test_arm.py builds it for another CPU and runs
 * it there (under qemu-user), comparing with hashlib. The SHA-256 is of the
 * whole file (onnxio__sha256) and of its 1 MiB blocks at once
 * (onnxio__sha256_many, whose lanes are the same engine's here). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

static unsigned char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc(n ? (size_t)n : 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return p;
}

int main(int argc, char **argv)
{
    for (int hardware = 1; hardware >= 0; hardware--) {
        const char *engine = onnxio__sha_engine(hardware);
        for (int i = 1; i < argc; i++) {
            size_t n;
            unsigned char *p = read_file(argv[i], &n);
            if (!p) return 2;
            char sha1[41], sha256[65];
            if (onnxio__sha1_hex(p, n, sha1) != ONNXIO_OK) return 3;
            uint8_t d[32];
            onnxio__sha256(p, n, d);
            for (int k = 0; k < 32; k++) snprintf(sha256 + 2 * k, 3, "%02x", d[k]);
            printf("%s %s %s %s\n", strcmp(engine, "portable") ? "hardware" : "portable", sha1, sha256, argv[i]);
            free(p);
        }
    }
    printf("engine %s\n", onnxio__sha_engine(1));
    return 0;
}
