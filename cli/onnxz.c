#include "onnxz.h"

uint64_t cli_offset_alignment(uint64_t offset, uint64_t cap)
{
    if (offset == 0)
        return cap;
    uint64_t low = offset & (~offset + 1); /* the lowest set bit */
    return low < cap ? low : cap;
}
