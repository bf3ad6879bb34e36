/* One expansion of the messages of schema.def, for the per-message
 * functions of the codec (encode.c, message.c). Define either
 * EACH_MESSAGE(M), expanded once per message, or ONNXIO_MESSAGE,
 * ONNXIO_FIELD and ONNXIO_END_MESSAGE (schema.def's rows: proto.h says what
 * their arguments are), then include this file: enums and oneofs expand to
 * nothing, and all of these macros are undefined afterwards. No include
 * guard: it is included once per expansion. */
#ifdef EACH_MESSAGE
#define ONNXIO_MESSAGE(M, FULL) EACH_MESSAGE(M)
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T)
#define ONNXIO_END_MESSAGE(M)
#endif
#define ONNXIO_ENUM(E, FULL)
#define ONNXIO_ENUM_VALUE(E, V, N)
#define ONNXIO_END_ENUM(E)
#define ONNXIO_ONEOF(M, O)
#include "onnxio/schema.def"
#undef ONNXIO_ENUM
#undef ONNXIO_ENUM_VALUE
#undef ONNXIO_END_ENUM
#undef ONNXIO_ONEOF
#undef ONNXIO_MESSAGE
#undef ONNXIO_FIELD
#undef ONNXIO_END_MESSAGE
#undef EACH_MESSAGE
