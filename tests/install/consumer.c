/* A program of onnxio's users, built against an installed onnxio (C11, and
 * as C++17 through consumer.cpp): it builds a model, saves it, loads it back
 * and compares, then prints "onnxio VERSION ok". tests/python/test_install.py
 * builds it with find_package(onnxio) and with pkg-config, linked shared and
 * static. Usage: consumer OUT.onnx */
#include <stdio.h>
#include <string.h>

#include <onnxio/onnxio.h>

#define CHECK(cond, what)                                                     \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "consumer: %s: %s\n", what, onnxio_last_error()); \
            return 1;                                                         \
        }                                                                     \
    } while (0)

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: consumer OUT.onnx\n");
        return 2;
    }
    onnxio_arena *arena = onnxio_arena_new();
    CHECK(arena, "arena");
    onnxio_ModelProto *m = (onnxio_ModelProto *)onnxio_message_new(arena, &onnxio_desc_ModelProto);
    CHECK(m, "model");
    m->ir_version = 10;
    onnxio_set_has(m, ONNXIO_FIELD_ModelProto_ir_version);
    CHECK(onnxio_string_set(arena, &m->producer_name, "consumer", 8) == ONNXIO_OK, "producer_name");
    onnxio_set_has(m, ONNXIO_FIELD_ModelProto_producer_name);
    m->graph = (onnxio_GraphProto *)onnxio_message_new(arena, &onnxio_desc_GraphProto);
    CHECK(m->graph, "graph");
    onnxio_TensorProto *t = (onnxio_TensorProto *)onnxio_list_add(arena, &m->graph->initializer, &onnxio_desc_TensorProto);
    CHECK(t, "tensor");
    t->data_type = ONNXIO_TensorProto_DataType_FLOAT;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_type);
    float w[4] = {1, 2, 3, 4};
    CHECK(onnxio_span_copy_from(&t->raw_data, w, sizeof w) == ONNXIO_OK, "raw_data");
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);

    /* A field named like a C++ keyword: OperatorSetProto.operator is the
     * member operator_ (and, in C, operator too). */
    onnxio_OperatorSetProto *ops = (onnxio_OperatorSetProto *)onnxio_message_new(arena, &onnxio_desc_OperatorSetProto);
    CHECK(ops && onnxio_list_add(arena, &ops->operator_, &onnxio_desc_OperatorProto), "OperatorSetProto.operator");

    onnxio_serialize_options so = ONNXIO_SERIALIZE_OPTIONS_INIT;
    CHECK(onnxio_save_model(m, argv[1], &so) == ONNXIO_OK, "save");
    onnxio_parse_options po = ONNXIO_PARSE_OPTIONS_INIT;
    onnxio_ModelProto *back = NULL;
    CHECK(onnxio_load_model(argv[1], &po, arena, &back) == ONNXIO_OK, "load");
    CHECK(onnxio_message_equal(back, m) == 1, "the model read back differs");
    CHECK(back->graph->initializer.size == 1 && back->graph->initializer.data[0]->raw_data.size == sizeof w &&
              memcmp(back->graph->initializer.data[0]->raw_data.data, w, sizeof w) == 0,
          "the payload read back differs");
    onnxio_arena_unref(arena);
    printf("onnxio %s ok\n", onnxio_version());
    return 0;
}
