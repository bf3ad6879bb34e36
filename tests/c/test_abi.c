/* The option ABI (include/onnxio/onnxio.h, "Options"): a program built
 * against the 0.2 headers passes zero-initialized option structs of the
 * 0.2 sizes with struct_size 0. Here each such struct ends exactly where
 * an inaccessible page begins, so a library that reads one byte past the
 * 0.2 layout dies with SIGSEGV (an access violation on Windows); loads,
 * saves, text, slices and consolidation must run as with default options.
 * The sizes are the 0.2 layouts on LP64, written out as a 0.2 program has
 * them compiled in (not taken from the library's own macros); 64-bit
 * Windows (LLP64) lays them out alike, their members being no `long`. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#if UINTPTR_MAX == UINT64_MAX
enum { PARSE_0_2 = 112, SERIALIZE_0_2 = 96, TEXT_0_2 = 24, SLICE_0_2 = 40, CONSOLIDATE_0_2 = 24 };

/* `size` zero bytes that end where an inaccessible page starts. */
static void *at_page_end(size_t size) { return tu_guard_end(size); }

static void test_0_2_structs(const char *dir)
{
    onnxio_arena *a = onnxio_arena_new();
    int64_t counts[] = {300000, 7};
    onnxio_ModelProto *m = tu_model_of_initializers(a, 2, counts, ONNXIO_TensorProto_DataType_UINT8, 1, 5);
    char *path = tu_path_join(dir, "m.onnx");

    tu_begin("0.2 serialize options (96 bytes, struct_size 0) before an inaccessible page: save");
    const onnxio_serialize_options *so = at_page_end(SERIALIZE_0_2);
    CHECK_STATUS(onnxio_save_model(m, path, so), ONNXIO_OK);
    tu_end();

    tu_begin("0.2 parse options (112 bytes, struct_size 0) before an inaccessible page: load");
    const onnxio_parse_options *po = at_page_end(PARSE_0_2);
    onnxio_arena *b = onnxio_arena_new();
    onnxio_ModelProto *back = NULL;
    CHECK_STATUS(onnxio_load_model(path, po, b, &back), ONNXIO_OK);
    CHECK(back && tu_equal_as_loaded(back, m));
    tu_end();

    tu_begin("0.2 text options (24 bytes) and consolidate options (24 bytes)");
    onnxio_buffer *text = NULL;
    CHECK_STATUS(onnxio_text_format(back, at_page_end(TEXT_0_2), &text), ONNXIO_OK);
    CHECK(text && onnxio_buffer_size(text) > 0);
    onnxio_buffer_unref(text);
    onnxio_buffer *joined = NULL;
    CHECK_STATUS(onnxio_consolidate_tensors_to_buffer(back, at_page_end(CONSOLIDATE_0_2), &joined), ONNXIO_OK);
    CHECK(joined != NULL);
    onnxio_buffer_unref(joined);
    tu_end();

    tu_begin("0.2 slice options (40 bytes): a tensor file opened");
    onnxio_tensor_file *tf = NULL;
    CHECK_STATUS(onnxio_tensor_file_open(path, at_page_end(SLICE_0_2), &tf), ONNXIO_OK);
    onnxio_tensor_file_close(tf);
    tu_end();

    onnxio_arena_unref(b);
    free(path);
    onnxio_arena_unref(a);
}
#endif

/* options.def lists every member of every option struct, in order, with
 * its type: each row's member lies right after the previous row's (past
 * the padding its type's alignment needs), and the last row ends the
 * struct. A member missing from options.def, or listed out of order or
 * with another type, fails here. */
typedef struct option_row {
    const char *options, *member;
    size_t offset, size, align, struct_size, struct_align;
    int type_matches;
} option_row;

#define ONNXIO_CONSTANT(NAME, VALUE, DOC)
#define ONNXIO_OPTIONS(STRUCT, PYTHON, DOC)
#define ONNXIO_OPTION(STRUCT, MEMBER, TYPE, PYTHON, DOC)                                                      \
    {#STRUCT,                                                                                                \
     #MEMBER,                                                                                                \
     offsetof(onnxio_##STRUCT##_options, MEMBER),                                                            \
     sizeof(TYPE),                                                                                           \
     _Alignof(TYPE),                                                                                         \
     sizeof(onnxio_##STRUCT##_options),                                                                      \
     _Alignof(onnxio_##STRUCT##_options),                                                                    \
     _Generic(((onnxio_##STRUCT##_options *)0)->MEMBER, TYPE: 1, default: 0)},
static const option_row option_rows[] = {
#include "onnxio/options.def"
};
#undef ONNXIO_CONSTANT
#undef ONNXIO_OPTIONS
#undef ONNXIO_OPTION

static void test_options_def(void)
{
    tu_begin("options.def lists every member of every option struct, in order, with its type");
    size_t n = sizeof option_rows / sizeof *option_rows, structs = 0;
    for (size_t i = 0; i < n; i++) {
        const option_row *r = &option_rows[i];
        int first = i == 0 || strcmp(option_rows[i - 1].options, r->options) != 0;
        CHECK_MSG(r->type_matches, "onnxio_%s_options.%s is not of the type options.def gives", r->options, r->member);
        size_t expect = 0;
        if (!first) {
            const option_row *p = &option_rows[i - 1];
            expect = (p->offset + p->size + r->align - 1) / r->align * r->align;
        } else {
            structs++;
            CHECK_MSG(r->offset == 0, "onnxio_%s_options: options.def's first row is not its first member", r->options);
        }
        CHECK_MSG(r->offset == expect, "onnxio_%s_options.%s: at byte %zu, where options.def's rows say %zu (a member "
                                       "missing from options.def, or out of order)", r->options, r->member, r->offset,
                  expect);
        int last = i + 1 == n || strcmp(option_rows[i + 1].options, r->options) != 0;
        if (last) {
            size_t end = (r->offset + r->size + r->struct_align - 1) / r->struct_align * r->struct_align;
            CHECK_MSG(end == r->struct_size, "onnxio_%s_options: %zu bytes, options.def's rows end at %zu (a member "
                                             "missing at the end)", r->options, r->struct_size, end);
        }
    }
    CHECK_MSG(structs == 8, "options.def lists %zu option structs, onnxio.h has 8", structs);
    tu_end();
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    test_options_def();
#if UINTPTR_MAX == UINT64_MAX
    char *dir = tu_make_temp_dir("onnxio_abi");
    test_0_2_structs(dir);
    tu_remove_tree(dir);
    free(dir);
#else
    printf("test_abi: the pinned 0.2 sizes are LP64's; skipped on this platform\n");
#endif
    return tu_finish();
}
