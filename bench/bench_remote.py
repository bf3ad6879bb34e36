#!/usr/bin/env python3
"""Remote loads: a ~256 MiB model (64 float32 tensors of 4 MiB)
served from loopback by an HTTP server with Range support and by moto's S3
server (behind a proxy that counts GET bytes), both from
tests/python/remote_servers.py.

    PYTHONPATH=python .venv/bin/python bench/bench_remote.py [--repeats N] [--mib 256]

Rows: onnxio.load of the local files (no network); onnxio.load of the URL
of the model with external data, of the single .onnx (inline payloads) and
of the .onnxz; and onnx's way: fsspec.open(url).read() of the single .onnx
+ onnx.load_from_string. Time is the best of --repeats; bytes are what the
server sent for one load, against what the load needs (model file +
payloads, counted with the onnx package). Loopback: the figures say what
the client costs (requests, copies, parsing), not what a real network does.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import logging
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import fsspec  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from remote_servers import CountingProxy, RangeHTTPServer  # noqa: E402

import onnxio  # noqa: E402


def build(d: str, mib: int) -> dict:
    rng = np.random.default_rng(0)
    n = mib // 4
    inits = [numpy_helper.from_array(rng.standard_normal(1 << 20, dtype=np.float32), f"w{i}") for i in range(n)]
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], initializer=inits)
    m = onnxio.from_onnx(helper.make_model(graph))
    onnxio.save(m, os.path.join(d, "ext.onnx"), save_as_external_data=True, location="ext.bin", fsync=False)
    onnxio.save(m, os.path.join(d, "inline.onnx"), fsync=False)
    onnxio.save(m, os.path.join(d, "model.onnxz"), fsync=False)
    return {n: open(os.path.join(d, n), "rb").read() for n in ("ext.onnx", "ext.bin", "inline.onnx", "model.onnxz")}


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
        del out
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mib", type=int, default=256)
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="bench_remote_")
    files = build(d, args.mib)
    needed = {"ext.onnx": len(files["ext.onnx"]) + len(files["ext.bin"]) - _padding(d),
              "inline.onnx": len(files["inline.onnx"]), "model.onnxz": len(files["model.onnxz"])}
    rows = []
    refs = {n: onnxio.load(os.path.join(d, n)).SerializeToString() for n in ("ext.onnx", "inline.onnx", "model.onnxz")}
    rows.append(("local", "onnxio.load(path), external data", best(lambda: onnxio.load(os.path.join(d, "ext.onnx")),
                                                                     args.repeats), None, None))

    def run(kind, counter, base):
        for name, what in (("ext.onnx", "external data"), ("inline.onnx", "single .onnx"),
                           ("model.onnxz", ".onnxz")):
            counter.reset()
            got = onnxio.load(f"{base}/{name}")
            assert got.SerializeToString() == refs[name]
            served = counter.served
            del got
            t = best(lambda: onnxio.load(f"{base}/{name}"), args.repeats)
            rows.append((kind, f"onnxio.load(url), {what}", t, served, needed[name]))
        counter.reset()

        def onnx_way():
            with fsspec.open(f"{base}/inline.onnx", "rb") as f:
                return onnx.load_from_string(f.read())

        assert onnx_way().SerializeToString() == refs["inline.onnx"]
        served = counter.served
        t = best(onnx_way, args.repeats)
        rows.append((kind, "fsspec.open(url).read() + onnx.load_from_string, single .onnx", t, served,
                     needed["inline.onnx"]))

    http = RangeHTTPServer({"/" + k: v for k, v in files.items()})
    try:
        run("HTTP", http, http.url)
    finally:
        http.stop()

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from moto.server import ThreadedMotoServer
    import boto3
    import s3fs

    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    proxy = CountingProxy(f"http://{host}:{port}")
    client = boto3.client("s3", endpoint_url=f"http://{host}:{port}", region_name="us-east-1")
    client.create_bucket(Bucket="bench-models")
    for k, v in files.items():
        client.put_object(Bucket="bench-models", Key=k, Body=v)
    fsspec.config.conf["s3"] = {"key": "testing", "secret": "testing",
                                "client_kwargs": {"endpoint_url": proxy.url, "region_name": "us-east-1"}}
    s3fs.S3FileSystem.clear_instance_cache()
    try:
        run("S3 (moto)", proxy, "s3://bench-models")
    finally:
        proxy.stop()
        moto.stop()

    print(f"| source | load | time (s) | bytes fetched | bytes needed | fetched / needed |")
    print("|---|---|---:|---:|---:|---:|")
    for kind, what, t, served, need in rows:
        ratio = f"{served / need:.4f}" if served is not None else "-"
        print(f"| {kind} | {what} | {t:.3f} | {served if served is not None else '-'} | "
              f"{need if need is not None else '-'} | {ratio} |")


def _padding(d: str) -> int:
    """Bytes of ext.bin that are alignment padding, not payload (counted
    with the onnx package: file size minus the tensors' lengths)."""
    m = onnx.load(os.path.join(d, "ext.onnx"), load_external_data=False)
    from onnx.external_data_helper import ExternalDataInfo

    used = sum(ExternalDataInfo(t).length for t in m.graph.initializer
               if t.data_location == TensorProto.EXTERNAL)
    return os.path.getsize(os.path.join(d, "ext.bin")) - used


if __name__ == "__main__":
    main()
