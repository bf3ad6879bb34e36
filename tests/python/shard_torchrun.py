"""One rank of the torchrun test of onnxio.shard (tests/python/test_shard.py);
also the measurement of BENCHMARKS.md's "Sharded loads".

    torchrun --nproc_per_node=4 --standalone tests/python/shard_torchrun.py CONFIG.json

CONFIG.json: {"layouts": {label: model path}, "plan": {...}, "axes": {name:
axis of every tensor the plan splits, worked out by the test, not by
onnxio}, "reference": path of the model the onnx package loads whole on rank 0 (or
null: no comparison), "out": where rank 0 writes the report (JSON)}.

For each layout, each rank (gloo backend) reads its shards with
onnxio.shard (the kernel's rchar counted around the call, as well as the
reader's stats), then torch.distributed.all_gather gathers every
initializer's parts; rank 0 concatenates them along the plan's axis and
compares them with numpy_helper.to_array of the onnx package's full load
(np.array_equal; replicated tensors: every rank's copy). The report lists,
per layout and rank, the bytes read, rchar, the seconds in onnxio.shard and
the number of mismatches. Without a reference nothing is gathered (the
benchmark); with "evict": true, rank 0 first drops the page cache of every
file in each model's directory (posix_fadvise DONTNEED: a cold read)."""
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

import onnxio
import onnxio.sharding  # noqa: F401  (imports done before rchar is counted)
import onnxio.slices  # noqa: F401
from onnxio import numpy_helper


def rchar() -> int:
    with open("/proc/self/io") as fp:
        return int(next(line for line in fp if line.startswith("rchar")).split()[1])


def evict(directory: str) -> None:
    for entry in os.scandir(directory):
        if entry.is_file():
            fd = os.open(entry.path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def main(config_path: str) -> None:
    with open(config_path) as fp:
        config = json.load(fp)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    reference = None
    if rank == 0 and config.get("reference"):
        import onnx
        from onnx import numpy_helper as onnx_numpy_helper

        reference = {t.name: onnx_numpy_helper.to_array(t) for t in onnx.load(config["reference"]).graph.initializer}
    report = {"world_size": world, "layouts": {}}
    for label, path in config["layouts"].items():
        if rank == 0 and config.get("evict"):
            evict(os.path.dirname(os.path.abspath(path)))
        dist.barrier()
        stats: dict = {}
        before = rchar()
        t0 = time.perf_counter()
        model = onnxio.shard(path, rank, world, config["plan"], stats=stats, num_threads=config.get("num_threads", 0))
        seconds = time.perf_counter() - t0
        delta = rchar() - before
        axes = config["axes"]
        mismatches = []
        checked = 0
        for tensor in model.graph.initializer if config.get("reference") else ():
            part = np.ascontiguousarray(numpy_helper.to_array(tensor))
            local = torch.from_numpy(part)
            gathered = [torch.empty_like(local) for _ in range(world)]
            dist.all_gather(gathered, local)
            if reference is None:
                continue
            want = reference[tensor.name]
            if tensor.name in axes:
                axis = axes[tensor.name]
                ok = part.shape == np.array_split(want, world, axis=axis)[rank].shape
                got = torch.cat(gathered, dim=axis).numpy()
                ok = ok and got.dtype == want.dtype and np.array_equal(got, want)
            else:
                ok = all(np.array_equal(g.numpy(), want) for g in gathered)
            checked += 1
            if not ok:
                mismatches.append(tensor.name)
        del model
        mine = {"bytes_read": stats["bytes_read"], "rchar": delta, "seconds": seconds,
                "payload_bytes": stats["payload_bytes"], "split_payload_bytes": stats["split_payload_bytes"],
                "replicated_payload_bytes": stats["replicated_payload_bytes"],
                "other_payload_bytes": stats["other_payload_bytes"], "shard_bytes": stats["shard_bytes"]}
        everyone = [None] * world
        dist.all_gather_object(everyone, mine)
        if rank == 0:
            report["layouts"][label] = {"ranks": everyone, "checked": checked, "mismatches": mismatches,
                                        "split": len(stats["split"]), "replicated": len(stats["replicated"])}
    if rank == 0:
        with open(config["out"], "w") as fp:
            json.dump(report, fp, indent=1)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
