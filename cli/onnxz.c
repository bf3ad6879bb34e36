#include "onnxz.h"

#include <stdio.h>
#include <string.h>

int cli_is_archive_name(const char *path)
{
    size_t n = strlen(path);
    return n >= 6 && strcmp(path + n - 6, ".onnxz") == 0;
}

int cli_starts_like_archive(const char *path)
{
    unsigned char head[4];
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return n == sizeof head && head[0] == 'P' && head[1] == 'K' &&
           ((head[2] == 3 && head[3] == 4) || (head[2] == 5 && head[3] == 6));
}

uint64_t cli_offset_alignment(uint64_t offset, uint64_t cap)
{
    if (offset == 0)
        return cap;
    uint64_t low = offset & (~offset + 1); /* the lowest set bit */
    return low < cap ? low : cap;
}
