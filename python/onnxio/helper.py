"""onnxio.helper: the functions of ``onnx.helper`` over onnxio's messages.

Every function has the signature and the result of its ``onnx.helper`` twin
(onnx 1.23): the same calls give messages whose ``SerializeToString()`` bytes
are identical. The logic follows onnx's own helper.py closely so that edge
cases (empty shapes, the order attributes are written in, saturating float8
casts, 4/2/6-bit packing) behave the same.

The module needs numpy and ml_dtypes (which onnx depends on too, for
bfloat16, the float8, float6, 4-bit and 2-bit types), not the ``onnx``
package. The release table (VERSION_TABLE) is a copy of onnx's, because
it is a fact about ONNX releases rather than a field of the schema; the
dtype table (TENSOR_TYPE_MAP, onnx's) is built from the library's data type
table.

Messages returned are new top-level onnxio messages (each in its own arena);
message arguments are copied into them (``CopyFrom`` / ``extend``), never
shared, exactly as protobuf does.
"""

from __future__ import annotations

import collections.abc
import functools
import math
import numbers
import typing
import warnings
from collections.abc import Callable, Iterable, KeysView, Sequence
from typing import Any, TypeVar

import numpy as np

from onnxio import _dtypes
from onnxio import _onnxio as _C
from onnxio._dtypes import (  # noqa: F401  (the data type maps, re-exported)
    TENSOR_TYPE_MAP,
    TensorDtypeMap,
    _FLOAT6_TYPES,
    _types_of_bits,
    np_dtype_to_tensor_dtype,
    tensor_dtype_to_field,
    tensor_dtype_to_np_dtype,
    tensor_dtype_to_storage_tensor_dtype,
    tensor_dtype_to_string,
)

AttributeProto = _C.AttributeProto
FunctionProto = _C.FunctionProto
GraphProto = _C.GraphProto
MapProto = _C.MapProto
ModelProto = _C.ModelProto
NodeProto = _C.NodeProto
OperatorSetIdProto = _C.OperatorSetIdProto
OptionalProto = _C.OptionalProto
SequenceProto = _C.SequenceProto
SparseTensorProto = _C.SparseTensorProto
TensorProto = _C.TensorProto
TensorShapeProto = _C.TensorShapeProto
TrainingInfoProto = _C.TrainingInfoProto
TypeProto = _C.TypeProto
ValueInfoProto = _C.ValueInfoProto

VersionRowType = typing.Union[tuple[str, int, int, int], tuple[str, int, int, int, int]]
VersionTableType = list[VersionRowType]
AssignmentBindingType = list[tuple[str, str]]

# Copy of onnx's table (docs/Versioning.md "Released versions"): release,
# IR version, ai.onnx opset, ai.onnx.ml opset, (optional) ai.onnx.training opset.
VERSION_TABLE: VersionTableType = [
    ("1.0", 3, 1, 1),
    ("1.1", 3, 5, 1),
    ("1.1.2", 3, 6, 1),
    ("1.2", 3, 7, 1),
    ("1.3", 3, 8, 1),
    ("1.4.1", 4, 9, 1),
    ("1.5.0", 5, 10, 1),
    ("1.6.0", 6, 11, 2),
    ("1.7.0", 7, 12, 2, 1),
    ("1.8.0", 7, 13, 2, 1),
    ("1.8.1", 7, 13, 2, 1),
    ("1.9.0", 7, 14, 2, 1),
    ("1.10.0", 8, 15, 2, 1),
    ("1.10.1", 8, 15, 2, 1),
    ("1.10.2", 8, 15, 2, 1),
    ("1.11.0", 8, 16, 3, 1),
    ("1.12.0", 8, 17, 3, 1),
    ("1.13.0", 8, 18, 3, 1),
    ("1.13.1", 8, 18, 3, 1),
    ("1.14.0", 9, 19, 3, 1),
    ("1.14.1", 9, 19, 3, 1),
    ("1.15.0", 9, 20, 4, 1),
    ("1.16.0", 10, 21, 5, 1),
    ("1.16.1", 10, 21, 5, 1),
    ("1.16.2", 10, 21, 5, 1),
    ("1.17.0", 10, 22, 5, 1),
    ("1.18.0", 11, 23, 5, 1),
    ("1.19.0", 12, 24, 5, 1),
    ("1.19.1", 12, 24, 5, 1),
    ("1.20.0", 13, 25, 5, 1),
    ("1.20.1", 13, 25, 5, 1),
    ("1.21.0", 13, 26, 5, 1),
    ("1.22.0", 13, 27, 5, 1),
    ("1.23.0", 14, 28, 5, 1),
]

# What make_model writes when not told otherwise: onnx writes onnx.IR_VERSION
# and defs.onnx_opset_version() of the installed onnx; onnxio's schema is the
# release of the table's last row (IR version 14, the IR_VERSION value of the
# schema's Version enum), so these are that row's numbers.
IR_VERSION: int = VERSION_TABLE[-1][1]
_DEFAULT_OPSET_VERSION: int = VERSION_TABLE[-1][2]

VersionMapType = dict[tuple[str, int], int]

def _create_op_set_id_version_map(table: VersionTableType) -> VersionMapType:
    """Create a map from (opset-domain, opset-version) to ir-version from above table."""
    result: VersionMapType = {}
    for row in table:
        ir_version = row[1]
        for pair in zip(["ai.onnx", "ai.onnx.ml", "ai.onnx.training"], row[2:]):
            if pair not in result:
                result[pair] = ir_version
                if pair[0] == "ai.onnx":
                    result["ai.onnx.preview", pair[1]] = ir_version
                if pair[0] == "ai.onnx.training":
                    result["ai.onnx.preview.training", pair[1]] = ir_version
    return result


OP_SET_ID_VERSION_MAP = _create_op_set_id_version_map(VERSION_TABLE)


def find_min_ir_version_for(opsetidlist: Sequence[OperatorSetIdProto], ignore_unknown: bool = False) -> int:
    """The minimum IR version a model importing `opsetidlist` needs.

    Args:
        opsetidlist: OperatorSetIdProto messages (anything with ``domain`` and
            ``version``); an empty domain means ai.onnx.
        ignore_unknown: an unknown (domain, version) counts as IR version 3
            instead of raising.

    Returns:
        The IR version (int); 3 for an empty list.

    Raises:
        ValueError: "Unsupported opset-version." for an unknown pair unless
            ignore_unknown.
    """
    default_min_version = 3

    def find_min(domain: str | None, version: int) -> int:
        key = (domain or "ai.onnx", version)
        if key in OP_SET_ID_VERSION_MAP:
            return OP_SET_ID_VERSION_MAP[key]
        if ignore_unknown:
            return default_min_version
        raise ValueError("Unsupported opset-version.")

    if opsetidlist:
        return max(find_min(x.domain, x.version) for x in opsetidlist)
    return default_min_version


def make_node(
    op_type: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    name: str | None = None,
    doc_string: str | None = None,
    domain: str | None = None,
    overload: str | None = None,
    **kwargs: Any,
) -> NodeProto:
    """Construct a NodeProto.

    Args:
        op_type: the operator's name.
        inputs, outputs: value names (lists of str).
        name, doc_string: set only when non-empty.
        domain, overload: set when not None (an empty string is set, and
            written, as onnx does).
        **kwargs: the attributes, made by :func:`make_attribute` in sorted
            key order; None values are skipped.

    Returns:
        A new NodeProto.
    """
    node = NodeProto()
    node.op_type = op_type
    node.input.extend(inputs)
    node.output.extend(outputs)
    if name:
        node.name = name
    if doc_string:
        node.doc_string = doc_string
    if domain is not None:
        node.domain = domain
    if overload is not None:
        node.overload = overload
    if kwargs:
        node.attribute.extend(
            make_attribute(key, value) for key, value in sorted(kwargs.items()) if value is not None
        )
    return node


def make_operatorsetid(domain: str, version: int) -> OperatorSetIdProto:
    """Construct an OperatorSetIdProto (domain and version always set)."""
    operatorsetid = OperatorSetIdProto()
    operatorsetid.domain = domain
    operatorsetid.version = version
    return operatorsetid


def make_graph(
    nodes: Sequence[NodeProto],
    name: str,
    inputs: Sequence[ValueInfoProto],
    outputs: Sequence[ValueInfoProto],
    initializer: Sequence[TensorProto] | None = None,
    doc_string: str | None = None,
    value_info: Sequence[ValueInfoProto] | None = None,
    sparse_initializer: Sequence[SparseTensorProto] | None = None,
) -> GraphProto:
    """Construct a GraphProto.

    The messages passed are copied into the graph. doc_string is set only
    when non-empty; the name always is.
    """
    if initializer is None:
        initializer = []
    if sparse_initializer is None:
        sparse_initializer = []
    if value_info is None:
        value_info = []
    graph = GraphProto()
    graph.node.extend(nodes)
    graph.name = name
    graph.input.extend(inputs)
    graph.output.extend(outputs)
    graph.initializer.extend(initializer)
    graph.sparse_initializer.extend(sparse_initializer)
    graph.value_info.extend(value_info)
    if doc_string:
        graph.doc_string = doc_string
    return graph


def make_opsetid(domain: str, version: int) -> OperatorSetIdProto:
    """Construct an OperatorSetIdProto (domain and version always set)."""
    opsetid = OperatorSetIdProto()
    opsetid.domain = domain
    opsetid.version = version
    return opsetid


def make_function(
    domain: str,
    fname: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    nodes: Sequence[NodeProto],
    opset_imports: Sequence[OperatorSetIdProto],
    attributes: Sequence[str] | None = None,
    attribute_protos: Sequence[AttributeProto] | None = None,
    doc_string: str | None = None,
    overload: str | None = None,
    value_info: Sequence[ValueInfoProto] | None = None,
) -> FunctionProto:
    """Construct a FunctionProto (a model-local function).

    attributes are the names of attributes without defaults,
    attribute_protos the ones with defaults. doc_string is set when
    non-empty, overload when not None. Messages are copied.
    """
    if attributes is None:
        attributes = []
    if attribute_protos is None:
        attribute_protos = []
    if value_info is None:
        value_info = []
    f = FunctionProto()
    f.domain = domain
    f.name = fname
    f.input.extend(inputs)
    f.output.extend(outputs)
    f.node.extend(nodes)
    f.opset_import.extend(opset_imports)
    f.attribute.extend(attributes)
    f.attribute_proto.extend(attribute_protos)
    if doc_string:
        f.doc_string = doc_string
    if overload is not None:
        f.overload = overload
    f.value_info.extend(value_info)
    return f


def make_model(graph: GraphProto, **kwargs: Any) -> ModelProto:
    """Construct a ModelProto around a copy of `graph`.

    ir_version is set to IR_VERSION (14) unless given. opset_imports (a
    list of OperatorSetIdProto) and functions (FunctionProto) are copied in;
    without opset_imports the model imports the default domain at opset 28,
    what onnx 1.23 writes. Any other keyword is set as a field of the model
    (``producer_name="x"``, ``ir_version=8``...); an unknown name raises
    AttributeError, a value of the wrong type TypeError.
    """
    model = ModelProto()
    # Touch model.ir_version so it is stored as the version from which it is
    # generated.
    model.ir_version = IR_VERSION
    model.graph.CopyFrom(graph)

    opset_imports: Sequence[OperatorSetIdProto] | None = kwargs.pop("opset_imports", None)
    if opset_imports is not None:
        model.opset_import.extend(opset_imports)
    else:
        imp = model.opset_import.add()
        imp.version = _DEFAULT_OPSET_VERSION

    functions: Sequence[FunctionProto] | None = kwargs.pop("functions", None)
    if functions is not None:
        model.functions.extend(functions)

    for k, v in kwargs.items():
        setattr(model, k, v)
    return model


def make_model_gen_version(graph: GraphProto, **kwargs: Any) -> ModelProto:
    """make_model, with ir_version (unless given) the smallest IR version
    that the opset_imports need (:func:`find_min_ir_version_for`)."""
    ir_version_field = "ir_version"
    if ir_version_field not in kwargs:
        opset_imports_field = "opset_imports"
        imports = kwargs.get(opset_imports_field, [])
        kwargs[ir_version_field] = find_min_ir_version_for(imports)
    return make_model(graph, **kwargs)


def set_metadata_props(proto: Any, dict_value: dict[str, str]) -> None:
    """Replace the metadata_props of `proto` (a ModelProto, GraphProto,
    FunctionProto, NodeProto, TensorProto or ValueInfoProto) with the
    entries of dict_value, in the dict's order."""
    del proto.metadata_props[:]
    for k, v in dict_value.items():
        entry = proto.metadata_props.add()
        entry.key = k
        entry.value = v


def set_model_props(model: ModelProto, dict_value: dict[str, str]) -> None:
    """The same as set_metadata_props(model, dict_value)."""
    set_metadata_props(model, dict_value)


def make_tensor(
    name: str,
    data_type: int,
    dims: Sequence[int],
    vals: Any,
    raw: bool = False,
) -> TensorProto:
    """Make a TensorProto.

    Args:
        name: tensor name.
        data_type: a TensorProto.DataType value (TensorProto.FLOAT...).
        dims: the shape.
        vals: raw=False: the values (any nested sequence or numpy array
            numpy converts to the type; float8 values are cast saturating,
            float8e8m0 rounding up), stored in the field that onnx uses for
            the type (float_data, int32_data, ...). raw=True: bytes (the
            little-endian payload, used without a copy) or a numpy array
            (packed to 4/2/6 bits for those types and copied once into
            raw_data).
        raw: store the values in raw_data.

    Returns:
        A new TensorProto.

    Raises:
        TypeError: raw with STRING, or raw vals that are neither bytes nor
            an ndarray. ValueError: the number of values (or of raw bytes)
            does not match dims. KeyError: an unknown data_type.
    """
    tensor = TensorProto()
    tensor.data_type = data_type
    tensor.name = name
    tensor.dims.extend(dims)

    if data_type == TensorProto.STRING and raw:
        raise TypeError("Can not use raw_data to store string type.")

    np_dtype = tensor_dtype_to_np_dtype(data_type)

    if raw:
        from onnxio import numpy_helper

        # The library's size rule (onnxio_tensor_raw_size: ceil(elements x
        # bits / 8), as onnx computes it); ValueError for a negative dim.
        expected_size_bytes = _C._tensor_raw_size(tensor)
        if isinstance(vals, np.ndarray):
            if data_type in {TensorProto.INT4, TensorProto.UINT4, TensorProto.FLOAT4E2M1}:
                vals = numpy_helper._pack_4bitx2(vals)
            elif data_type in {TensorProto.UINT2, TensorProto.INT2}:
                vals = numpy_helper._pack_2bitx4(vals)
            elif data_type in _FLOAT6_TYPES:
                vals = numpy_helper._pack_6bit(vals.view(np.uint8))
            payload: Any = numpy_helper._little_endian_buffer(vals)
            size = vals.nbytes
        elif isinstance(vals, bytes):
            payload = vals
            size = len(vals)
        else:
            raise TypeError(f"Raw data must be bytes or numpy.ndarray, but got {type(vals)}.")
        if expected_size_bytes is not None and size != expected_size_bytes:
            raise ValueError(
                f"Raw data size does not match tensor's size. Expected {expected_size_bytes} bytes, "
                f"but got {size} bytes."
            )
        _dtypes._set_raw_data(tensor, payload)
        return tensor

    if data_type == TensorProto.STRING:
        vals = np.array(vals).flatten()
        if len(vals) != 0:
            vals = np.vectorize(_to_bytes)(vals)
    elif data_type in {
        TensorProto.FLOAT8E4M3FN,
        TensorProto.FLOAT8E4M3FNUZ,
        TensorProto.FLOAT8E5M2,
        TensorProto.FLOAT8E5M2FNUZ,
    }:
        from onnxio import numpy_helper

        # Float8 values are by default casted using saturating cast.
        vals = numpy_helper.saturate_cast(np.asarray(vals), np_dtype).flatten()
    elif data_type == TensorProto.FLOAT8E8M0:
        from onnxio import numpy_helper

        vals = numpy_helper.to_float8e8m0(np.asarray(vals), saturate=True, round_mode="up").flatten()
    elif data_type in _FLOAT6_TYPES:
        # FP6 outside raw_data: one byte per element in int32_data, like float8.
        vals = np.asarray(vals, dtype=np_dtype).flatten().view(np.uint8)
    else:
        vals = np.asarray(vals, dtype=np_dtype).flatten()

    expected_elements = math.prod(dims)
    if len(vals) != expected_elements:
        raise ValueError(
            f"Number of values ({len(vals)}) does not match tensor "
            f"dimensions requiring {expected_elements} elements."
        )
    if data_type == TensorProto.COMPLEX128:
        vals = vals.view(np.float64)
    elif data_type == TensorProto.COMPLEX64:
        vals = vals.view(np.float32)
    elif data_type in {TensorProto.BFLOAT16, TensorProto.FLOAT16}:
        vals = vals.view(np.uint16)
    elif data_type in {
        TensorProto.FLOAT8E4M3FN,
        TensorProto.FLOAT8E4M3FNUZ,
        TensorProto.FLOAT8E5M2,
        TensorProto.FLOAT8E5M2FNUZ,
        TensorProto.FLOAT8E8M0,
    }:
        vals = vals.view(np.uint8)
    elif data_type in {TensorProto.UINT4, TensorProto.INT4, TensorProto.FLOAT4E2M1}:
        from onnxio import numpy_helper

        vals = numpy_helper._pack_4bitx2(vals)
    elif data_type in {TensorProto.UINT2, TensorProto.INT2}:
        from onnxio import numpy_helper

        vals = numpy_helper._pack_2bitx4(vals)
    elif data_type == TensorProto.BOOL:
        vals = vals.astype(np.uint8)

    field = tensor_dtype_to_field(data_type)
    # Plain Python numbers and bytes (tolist) are what every repeated
    # container accepts; the values are the same ones onnx stores.
    getattr(tensor, field).extend(vals.tolist() if isinstance(vals, np.ndarray) else vals)
    return tensor


def make_sparse_tensor(values: TensorProto, indices: TensorProto, dims: Sequence[int]) -> SparseTensorProto:
    """Construct a SparseTensorProto from copies of `values` (the non-zero
    values, 1-D) and `indices` (INT64, [NNZ] linearized or [NNZ, rank]) with
    the dense shape `dims`."""
    sparse = SparseTensorProto()
    sparse.values.CopyFrom(values)
    sparse.indices.CopyFrom(indices)
    sparse.dims.extend(dims)
    return sparse


def make_sequence(name: str, elem_type: int, values: Sequence[Any]) -> SequenceProto:
    """Make a SequenceProto of `elem_type` (SequenceProto.TENSOR, ...) holding
    copies of `values`. Raises TypeError for an unsupported elem_type."""
    sequence = SequenceProto()
    sequence.name = name
    sequence.elem_type = elem_type

    if elem_type == SequenceProto.UNDEFINED:
        return sequence

    attribute: _C.RepeatedCompositeContainer[Any]
    if elem_type == SequenceProto.TENSOR:
        attribute = sequence.tensor_values
    elif elem_type == SequenceProto.SPARSE_TENSOR:
        attribute = sequence.sparse_tensor_values
    elif elem_type == SequenceProto.SEQUENCE:
        attribute = sequence.sequence_values
    elif elem_type == SequenceProto.MAP:
        attribute = sequence.map_values
    elif elem_type == OptionalProto.OPTIONAL:
        attribute = sequence.optional_values
    else:
        raise TypeError("The element type in the input sequence is not supported.")

    attribute.extend(values)
    return sequence


def make_map(name: str, key_type: int, keys: list[Any], values: SequenceProto) -> MapProto:
    """Make a MapProto: string keys for key_type STRING, integer keys for
    the integer types (any other key type stores no keys, as in onnx), and a
    copy of the SequenceProto `values`."""
    map_proto = MapProto()
    valid_key_int_types = [
        TensorProto.INT8,
        TensorProto.INT16,
        TensorProto.INT32,
        TensorProto.INT64,
        TensorProto.UINT8,
        TensorProto.UINT16,
        TensorProto.UINT32,
        TensorProto.UINT64,
    ]
    map_proto.name = name
    map_proto.key_type = key_type
    if key_type == TensorProto.STRING:
        map_proto.string_keys.extend(keys)
    elif key_type in valid_key_int_types:
        map_proto.keys.extend(keys)
    map_proto.values.CopyFrom(values)
    return map_proto


def make_optional(name: str, elem_type: int, value: Any | None) -> OptionalProto:
    """Make an OptionalProto of `elem_type` holding a copy of `value` (None
    only with OptionalProto.UNDEFINED). Raises TypeError for an unsupported
    elem_type."""
    optional = OptionalProto()
    optional.name = name
    optional.elem_type = elem_type

    if elem_type == OptionalProto.UNDEFINED:
        return optional
    attribute: _C.Message
    if elem_type == OptionalProto.TENSOR:
        attribute = optional.tensor_value
    elif elem_type == OptionalProto.SPARSE_TENSOR:
        attribute = optional.sparse_tensor_value
    elif elem_type == OptionalProto.SEQUENCE:
        attribute = optional.sequence_value
    elif elem_type == OptionalProto.MAP:
        attribute = optional.map_value
    elif elem_type == OptionalProto.OPTIONAL:
        attribute = optional.optional_value
    else:
        raise TypeError("The element type in the input optional is not supported.")

    assert value is not None
    attribute.CopyFrom(value)
    return optional


def _to_bytes(value: str | bytes) -> bytes:
    """Coerce a string (or bytes) value into UTF-8 bytes."""
    if isinstance(value, str):
        return value.encode("utf-8")
    return value


def make_attribute(
    key: str,
    value: Any,
    doc_string: str | None = None,
    attr_type: int | None = None,
) -> AttributeProto:
    """Make an AttributeProto named `key`, its type inferred from `value`.

    int -> INT, float -> FLOAT, str/bytes -> STRING (UTF-8), TensorProto,
    SparseTensorProto, GraphProto, TypeProto -> their types (copied), and an
    iterable of one of those -> the list type. attr_type is needed for an
    empty iterable and must agree with the inferred type otherwise.

    Raises:
        ValueError: empty iterable without attr_type, or elements of mixed
            or unknown types. TypeError: a value of no accepted type, or
            attr_type differing from the inferred type.
    """
    attr = AttributeProto()
    attr.name = key
    if doc_string:
        attr.doc_string = doc_string

    # Singular cases
    if isinstance(value, numbers.Integral):
        attr.i = int(value)
        attr.type = AttributeProto.INT
    elif isinstance(value, numbers.Real):
        attr.f = float(value)
        attr.type = AttributeProto.FLOAT
    elif isinstance(value, (str, bytes)):
        attr.s = _to_bytes(value)
        attr.type = AttributeProto.STRING
    elif isinstance(value, TensorProto):
        attr.t.CopyFrom(value)
        attr.type = AttributeProto.TENSOR
    elif isinstance(value, SparseTensorProto):
        attr.sparse_tensor.CopyFrom(value)
        attr.type = AttributeProto.SPARSE_TENSOR
    elif isinstance(value, GraphProto):
        attr.g.CopyFrom(value)
        attr.type = AttributeProto.GRAPH
    elif isinstance(value, TypeProto):
        attr.tp.CopyFrom(value)
        attr.type = AttributeProto.TYPE_PROTO
    # Iterable cases
    elif isinstance(value, collections.abc.Iterable):
        value = list(value)
        if len(value) == 0 and attr_type is None:
            raise ValueError(f"Could not infer attribute `{key}` type from empty iterator")
        if attr_type is None:
            types = {type(v) for v in value}
            for exp_t, exp_enum in (
                (numbers.Integral, AttributeProto.INTS),
                (numbers.Real, AttributeProto.FLOATS),
                ((str, bytes), AttributeProto.STRINGS),
                (TensorProto, AttributeProto.TENSORS),
                (SparseTensorProto, AttributeProto.SPARSE_TENSORS),
                (GraphProto, AttributeProto.GRAPHS),
                (TypeProto, AttributeProto.TYPE_PROTOS),
            ):
                if all(issubclass(t, exp_t) for t in types):
                    attr_type = exp_enum
                    break
            if attr_type is None:
                raise ValueError(
                    "Could not infer the attribute type from the elements of the passed Iterable value."
                )

        if attr_type == AttributeProto.INTS:
            attr.ints.extend(value)
            attr.type = AttributeProto.INTS
        elif attr_type == AttributeProto.FLOATS:
            attr.floats.extend(value)
            attr.type = AttributeProto.FLOATS
        elif attr_type == AttributeProto.STRINGS:
            attr.strings.extend(_to_bytes(v) for v in value)
            attr.type = AttributeProto.STRINGS
        elif attr_type == AttributeProto.TENSORS:
            attr.tensors.extend(value)
            attr.type = AttributeProto.TENSORS
        elif attr_type == AttributeProto.SPARSE_TENSORS:
            attr.sparse_tensors.extend(value)
            attr.type = AttributeProto.SPARSE_TENSORS
        elif attr_type == AttributeProto.GRAPHS:
            attr.graphs.extend(value)
            attr.type = AttributeProto.GRAPHS
        elif attr_type == AttributeProto.TYPE_PROTOS:
            attr.type_protos.extend(value)
            attr.type = AttributeProto.TYPE_PROTOS
        else:
            raise AssertionError  # unreachable: attr_type was inferred or given above
    else:
        raise TypeError(f"'{value}' is not an accepted attribute value.")

    if attr_type is not None and attr.type != attr_type:
        raise TypeError(
            f"Inferred attribute type '{_attr_type_to_str(attr.type)}'({attr.type}) mismatched with "
            f"specified type '{_attr_type_to_str(attr_type)}'({attr_type})"
        )
    return attr


def make_attribute_ref(
    name: str,
    attr_type: int,
    doc_string: str | None = None,
    *,
    ref_attr_name: str | None = None,
) -> AttributeProto:
    """Make an AttributeProto that refers to the enclosing function's
    attribute `ref_attr_name` (default: `name`); only valid inside a
    function body. Raises ValueError for an empty ref_attr_name."""
    if ref_attr_name is None:
        ref_attr_name = name
    if not ref_attr_name:
        raise ValueError("ref_attr_name must be non-empty")

    attr = AttributeProto()
    attr.name = name
    attr.type = attr_type  # type: ignore[assignment]  # an int: the field takes the enum's numbers
    attr.ref_attr_name = ref_attr_name
    if doc_string:
        attr.doc_string = doc_string
    return attr


def get_attribute_value(attr: AttributeProto) -> Any:  # noqa: PLR0911
    """The value of an AttributeProto according to its type: a number,
    bytes, a sub-message (a view into `attr`, not a copy), or a list; None
    for UNDEFINED. Raises ValueError for a reference attribute or an
    unknown type."""
    if attr.ref_attr_name:
        raise ValueError(f"Cannot get value of reference attribute: {attr}")
    if attr.type == AttributeProto.FLOAT:
        return attr.f
    if attr.type == AttributeProto.INT:
        return attr.i
    if attr.type == AttributeProto.STRING:
        return attr.s
    if attr.type == AttributeProto.TENSOR:
        return attr.t
    if attr.type == AttributeProto.SPARSE_TENSOR:
        return attr.sparse_tensor
    if attr.type == AttributeProto.GRAPH:
        return attr.g
    if attr.type == AttributeProto.TYPE_PROTO:
        return attr.tp
    if attr.type == AttributeProto.FLOATS:
        return list(attr.floats)
    if attr.type == AttributeProto.INTS:
        return list(attr.ints)
    if attr.type == AttributeProto.STRINGS:
        return list(attr.strings)
    if attr.type == AttributeProto.TENSORS:
        return list(attr.tensors)
    if attr.type == AttributeProto.SPARSE_TENSORS:
        return list(attr.sparse_tensors)
    if attr.type == AttributeProto.GRAPHS:
        return list(attr.graphs)
    if attr.type == AttributeProto.TYPE_PROTOS:
        return list(attr.type_protos)
    if attr.type == AttributeProto.UNDEFINED:
        return None
    raise ValueError(f"Unsupported ONNX attribute: {attr}")


def get_node_attr_value(node: NodeProto, attr_name: str) -> Any:
    """get_attribute_value of the node's attribute named attr_name.
    ValueError when there is none or more than one."""
    matching = [x for x in node.attribute if x.name == attr_name]
    if len(matching) > 1:
        raise ValueError(f"Node has multiple attributes with name {attr_name}")
    if len(matching) < 1:
        raise ValueError(f"Node has no attribute with name {attr_name}")
    return get_attribute_value(matching[0])


def make_empty_tensor_value_info(name: str) -> ValueInfoProto:
    """A ValueInfoProto with only a name (no type)."""
    value_info_proto = ValueInfoProto()
    value_info_proto.name = name
    return value_info_proto


def _fill_shape(shape_proto: Any, shape: Sequence[str | int | None] | None,
                shape_denotation: list[str] | None, what: str) -> None:
    if shape is None:
        return
    # An explicitly empty list still creates the shape message (a scalar),
    # while shape=None leaves it absent (unknown rank): onnx's extend([]).
    shape_proto.dim.extend([])
    if shape_denotation and len(shape_denotation) != len(shape):
        raise ValueError("Invalid shape_denotation. Must be of the same length as shape.")
    for i, d in enumerate(shape):
        dim = shape_proto.dim.add()
        if d is None:
            pass
        elif isinstance(d, int):
            dim.dim_value = d
        elif isinstance(d, str):
            dim.dim_param = d
        else:
            raise ValueError(f"Invalid item in shape: {d}. Needs to be of int or {what}.")
        if shape_denotation:
            dim.denotation = shape_denotation[i]


def make_tensor_type_proto(
    elem_type: int,
    shape: Sequence[str | int | None] | None,
    shape_denotation: list[str] | None = None,
) -> TypeProto:
    """A tensor TypeProto: elem_type and a shape whose dims are ints
    (dim_value), strings (dim_param) or None (unknown); shape None leaves
    the shape unset, [] makes a scalar. Raises ValueError for another dim
    type or a shape_denotation of the wrong length."""
    type_proto = TypeProto()
    tensor_type_proto = type_proto.tensor_type
    tensor_type_proto.elem_type = elem_type
    _fill_shape(tensor_type_proto.shape, shape, shape_denotation, "str")
    return type_proto


def make_tensor_value_info(
    name: str,
    elem_type: int,
    shape: Sequence[str | int | None] | None,
    doc_string: str = "",
    shape_denotation: list[str] | None = None,
) -> ValueInfoProto:
    """A ValueInfoProto of a tensor type (see make_tensor_type_proto)."""
    value_info_proto = ValueInfoProto()
    value_info_proto.name = name
    if doc_string:
        value_info_proto.doc_string = doc_string
    tensor_type_proto = make_tensor_type_proto(elem_type, shape, shape_denotation)
    value_info_proto.type.CopyFrom(tensor_type_proto)
    return value_info_proto


def make_sparse_tensor_type_proto(
    elem_type: int,
    shape: Sequence[str | int | None] | None,
    shape_denotation: list[str] | None = None,
) -> TypeProto:
    """A sparse tensor TypeProto (shape rules of make_tensor_type_proto)."""
    type_proto = TypeProto()
    sparse_tensor_type_proto = type_proto.sparse_tensor_type
    sparse_tensor_type_proto.elem_type = elem_type
    _fill_shape(sparse_tensor_type_proto.shape, shape, shape_denotation, "text")
    return type_proto


def make_sparse_tensor_value_info(
    name: str,
    elem_type: int,
    shape: Sequence[str | int | None] | None,
    doc_string: str = "",
    shape_denotation: list[str] | None = None,
) -> ValueInfoProto:
    """A ValueInfoProto of a sparse tensor type."""
    value_info_proto = ValueInfoProto()
    value_info_proto.name = name
    if doc_string:
        value_info_proto.doc_string = doc_string
    sparse_tensor_type_proto = make_sparse_tensor_type_proto(elem_type, shape, shape_denotation)
    value_info_proto.type.sparse_tensor_type.CopyFrom(sparse_tensor_type_proto.sparse_tensor_type)
    return value_info_proto


def make_sequence_type_proto(inner_type_proto: TypeProto) -> TypeProto:
    """A sequence TypeProto of (a copy of) inner_type_proto."""
    type_proto = TypeProto()
    type_proto.sequence_type.elem_type.CopyFrom(inner_type_proto)
    return type_proto


def make_optional_type_proto(inner_type_proto: TypeProto) -> TypeProto:
    """An optional TypeProto of (a copy of) inner_type_proto."""
    type_proto = TypeProto()
    type_proto.optional_type.elem_type.CopyFrom(inner_type_proto)
    return type_proto


def make_map_type_proto(key_type: int, value_type: TypeProto) -> TypeProto:
    """A map TypeProto from key_type (a TensorProto.DataType) to value_type."""
    type_proto = TypeProto()
    type_proto.map_type.key_type = key_type
    type_proto.map_type.value_type.CopyFrom(value_type)
    return type_proto


def make_value_info(name: str, type_proto: TypeProto, doc_string: str = "") -> ValueInfoProto:
    """A ValueInfoProto with a copy of type_proto."""
    value_info_proto = ValueInfoProto()
    value_info_proto.name = name
    if doc_string:
        value_info_proto.doc_string = doc_string
    value_info_proto.type.CopyFrom(type_proto)
    return value_info_proto


def _sanitize_str(s: str | bytes) -> str:
    if isinstance(s, str):
        sanitized = s
    elif isinstance(s, bytes):
        sanitized = s.decode("utf-8", errors="ignore")
    else:
        sanitized = str(s)
    if len(sanitized) < 64:  # noqa: PLR2004
        return sanitized
    return sanitized[:64] + f"...<+len={(len(sanitized) - 64)}>"


def make_tensor_sequence_value_info(
    name: str,
    elem_type: int,
    shape: Sequence[str | int | None] | None,
    doc_string: str = "",
    elem_shape_denotation: list[str] | None = None,
) -> ValueInfoProto:
    """A ValueInfoProto of a sequence of tensors of elem_type and shape."""
    value_info_proto = ValueInfoProto()
    value_info_proto.name = name
    if doc_string:
        value_info_proto.doc_string = doc_string
    tensor_type_proto = make_tensor_type_proto(elem_type, shape, elem_shape_denotation)
    sequence_type_proto = make_sequence_type_proto(tensor_type_proto)
    value_info_proto.type.sequence_type.CopyFrom(sequence_type_proto.sequence_type)
    return value_info_proto


def printable_attribute(attr: AttributeProto, subgraphs: bool = False) -> str | tuple[str, list[GraphProto]]:
    """One line for an attribute (``name = value``), as onnx prints it.
    With subgraphs=True, returns (line, graphs found in the attribute)."""
    content = []
    content.append(attr.name)
    content.append("=")

    def str_float(f: float) -> str:
        # A fixed precision keeps the output the same on every Python.
        return f"{f:.15g}"

    def str_int(i: int) -> str:
        return str(i)

    _T = TypeVar("_T")

    def str_list(str_elem: Callable[[_T], str], xs: Iterable[_T]) -> str:
        return "[" + ", ".join(map(str_elem, xs)) + "]"

    graphs = []
    if attr.HasField("f"):
        content.append(str_float(attr.f))
    elif attr.HasField("i"):
        content.append(str_int(attr.i))
    elif attr.HasField("s"):
        content.append(repr(_sanitize_str(attr.s)))
    elif attr.HasField("t"):
        if len(attr.t.dims) > 0:
            content.append("<Tensor>")
        else:
            # special case to print scalars
            field = tensor_dtype_to_field(attr.t.data_type)
            content.append(f"<Scalar Tensor {getattr(attr.t, field)}>")
    elif attr.HasField("g"):
        content.append(f"<graph {attr.g.name}>")
        graphs.append(attr.g)
    elif attr.HasField("tp"):
        content.append(f"<Type Proto {attr.tp}>")
    elif attr.HasField("sparse_tensor"):
        content.append("<Sparse Tensor>")
    elif attr.floats:
        content.append(str_list(str_float, attr.floats))
    elif attr.ints:
        content.append(str_list(str_int, attr.ints))
    elif attr.strings:
        content.append(str(list(map(_sanitize_str, attr.strings))))
    elif attr.tensors:
        content.append("[<Tensor>, ...]")
    elif attr.sparse_tensors:
        content.append("[<Sparse Tensor>, ...]")
    elif attr.type_protos:
        content.append("[")
        for i, tp in enumerate(attr.type_protos):
            comma = "," if i != len(attr.type_protos) - 1 else ""
            content.append(f"<Type Proto {tp}>{comma}")
        content.append("]")
    elif attr.graphs:
        content.append("[")
        for i, g in enumerate(attr.graphs):
            comma = "," if i != len(attr.graphs) - 1 else ""
            content.append(f"<graph {g.name}>{comma}")
        content.append("]")
        graphs.extend(attr.graphs)
    else:
        content.append("<Unknown>")
    if subgraphs:
        return " ".join(content), graphs
    return " ".join(content)


def printable_dim(dim: Any) -> str:
    """A TensorShapeProto.Dimension as text: its value, its parameter, or '?'."""
    which = dim.WhichOneof("value")
    if which is None:
        return "?"
    return str(getattr(dim, which))


def printable_type(t: TypeProto) -> str:
    """A TypeProto as text (``FLOAT, 1x3`` for tensors)."""
    if t.WhichOneof("value") == "tensor_type":
        s: str = TensorProto.DataType.Name(t.tensor_type.elem_type)
        if t.tensor_type.HasField("shape"):
            if len(t.tensor_type.shape.dim):
                s += str(", " + "x".join(map(printable_dim, t.tensor_type.shape.dim)))
            else:
                s += ", scalar"
        return s
    if t.WhichOneof("value") is None:
        return ""
    return f"Unknown type {t.WhichOneof('value')}"


def printable_value_info(v: ValueInfoProto) -> str:
    """``%name[type]``."""
    s = f"%{v.name}"
    if v.type:
        s = f"{s}[{printable_type(v.type)}]"
    return s


def printable_tensor_proto(t: TensorProto) -> str:
    """``%name[TYPE, dims]``."""
    s = f"%{t.name}["
    s += TensorProto.DataType.Name(t.data_type)
    if t.dims is not None:
        if len(t.dims):
            s += str(", " + "x".join(map(str, t.dims)))
        else:
            s += ", scalar"
    s += "]"
    return s


def printable_node(node: NodeProto, prefix: str = "", subgraphs: bool = False) -> str | tuple[str, list[GraphProto]]:
    """One line for a node (``%out = Op[attrs](%in)``); with subgraphs=True,
    (line, graphs of its attributes)."""
    content = []
    if len(node.output):
        content.append(", ".join([f"%{name}" for name in node.output]))
        content.append("=")
    graphs: list[GraphProto] = []
    printed_attrs = []
    for attr in node.attribute:
        if subgraphs:
            printed_attr_subgraphs = printable_attribute(attr, subgraphs)
            if not isinstance(printed_attr_subgraphs[1], list):
                raise TypeError(f"printed_attr_subgraphs[1] must be an instance of {list}.")
            graphs.extend(printed_attr_subgraphs[1])
            printed_attrs.append(printed_attr_subgraphs[0])
        else:
            printed = printable_attribute(attr)
            if not isinstance(printed, str):
                raise TypeError(f"printed must be an instance of {str}.")
            printed_attrs.append(printed)
    printed_attributes = ", ".join(sorted(printed_attrs))
    printed_inputs = ", ".join([f"%{name}" for name in node.input])
    if node.attribute:
        content.append(f"{node.op_type}[{printed_attributes}]({printed_inputs})")
    else:
        content.append(f"{node.op_type}({printed_inputs})")
    if subgraphs:
        return prefix + " ".join(content), graphs
    return prefix + " ".join(content)


def _deprecated(message: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    # What typing_extensions.deprecated does at call time, without needing
    # typing_extensions (an onnx dependency, not ours).
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            warnings.warn(message, DeprecationWarning, stacklevel=2)
            return fn(*args, **kwargs)

        inner.__deprecated__ = message  # type: ignore[attr-defined]
        return inner

    return wrap


@_deprecated("Deprecated since 1.19. Consider using onnx.printer.to_text() instead.")
def printable_graph(graph: GraphProto, prefix: str = "") -> str:
    """A GraphProto as text, each line starting with `prefix`.

    .. deprecated:: 1.19 (in onnx): onnx.printer.to_text is the replacement.
    """
    return _printable_graph(graph, prefix)


def _printable_graph(graph: GraphProto, prefix: str = "") -> str:
    content = []
    indent = prefix + "  "
    header = ["graph", graph.name]
    initializers = {t.name for t in graph.initializer}
    if len(graph.input):
        header.append("(")
        in_strs = []  # required inputs
        in_with_init_strs: list = []  # optional inputs with initializer providing default value
        for inp in graph.input:
            if inp.name not in initializers:
                in_strs.append(printable_value_info(inp))
            else:
                in_with_init_strs.append(printable_value_info(inp))
        if in_strs:
            content.append(prefix + " ".join(header))
            header = []
            for line in in_strs:
                content.append(prefix + "  " + line)
        header.append(")")

        if in_with_init_strs:
            header.append("optional inputs with matching initializers (")
            content.append(prefix + " ".join(header))
            header = []
            for line in in_with_init_strs:
                content.append(prefix + "  " + line)
            header.append(")")

        # from IR 4 onwards an initializer is not required to have a matching graph input
        if len(in_with_init_strs) < len(initializers):
            graph_inputs = {i.name for i in graph.input}
            init_strs = [printable_tensor_proto(i) for i in graph.initializer if i.name not in graph_inputs]
            header.append("initializers (")
            content.append(prefix + " ".join(header))
            header = []
            for line in init_strs:
                content.append(prefix + "  " + line)
            header.append(")")

    header.append("{")
    content.append(prefix + " ".join(header))
    graphs: list[GraphProto] = []
    for node in graph.node:
        contents_subgraphs = printable_node(node, indent, subgraphs=True)
        if not isinstance(contents_subgraphs[1], list):
            raise TypeError(f"contents_subgraphs[1] must be an instance of {list}.")
        content.append(contents_subgraphs[0])
        graphs.extend(contents_subgraphs[1])
    tail = ["return"]
    if len(graph.output):
        tail.append(", ".join([f"%{out.name}" for out in graph.output]))
    content.append(indent + " ".join(tail))
    content.append(prefix + "}")
    for g in graphs:
        content.append("\n" + _printable_graph(g))
    return "\n".join(content)


def _is_message(obj: Any) -> bool:
    return callable(getattr(obj, "ListFields", None)) and callable(getattr(obj, "ClearField", None))


def strip_doc_string(proto: Any) -> None:
    """Clear the doc_string field of `proto` and of every message nested in
    it, in place. Raises TypeError when proto is not a message."""
    if not _is_message(proto):
        raise TypeError(f"proto must be an instance of a message class, not {type(proto)}.")
    # ListFields gives the set fields only: unset sub-messages have no
    # doc_string to strip, so walking them (and making them present) is avoided.
    for descriptor, value in proto.ListFields():
        if descriptor.name == "doc_string":
            proto.ClearField(descriptor.name)
        elif _is_message(value):
            strip_doc_string(value)
        elif not isinstance(value, (str, bytes, int, float)):
            for x in value:
                if _is_message(x):
                    strip_doc_string(x)
                else:
                    break


def make_training_info(
    algorithm: GraphProto,
    algorithm_bindings: AssignmentBindingType,
    initialization: GraphProto | None,
    initialization_bindings: AssignmentBindingType | None,
) -> TrainingInfoProto:
    """A TrainingInfoProto: copies of the algorithm and initialization
    graphs and their (key, value) update bindings."""
    training_info = TrainingInfoProto()
    training_info.algorithm.CopyFrom(algorithm)
    for k, v in algorithm_bindings:
        binding = training_info.update_binding.add()
        binding.key = k
        binding.value = v

    if initialization:
        training_info.initialization.CopyFrom(initialization)
    if initialization_bindings:
        for k, v in initialization_bindings:
            binding = training_info.initialization_binding.add()
            binding.key = k
            binding.value = v

    return training_info


# ---- dtype mappings (onnxio._dtypes, re-exported above) ----------------------


def get_all_tensor_dtypes() -> KeysView[int]:
    """Every TensorProto data type that has a numpy mapping."""
    return TENSOR_TYPE_MAP.keys()


def _attr_type_to_str(attr_type: int) -> str:
    """The name of an AttributeProto type ("INTS"); "UNDEFINED" for an
    unknown value."""
    names = dict((v, k) for k, v in AttributeProto.AttributeType.items())
    if attr_type in names:
        return names[attr_type]
    return AttributeProto.AttributeType.keys()[0]
