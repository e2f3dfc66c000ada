"""Two real jax processes (4 CPU devices each, gloo collectives) on this machine: the mesh and
the tiles carry each device's host process."""

import json
import os
import socket
import subprocess
import sys
import textwrap

WORKER = textwrap.dedent(
    """
    import json, sys
    import jax
    jax.config.update("jax_num_cpu_devices", 4)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address="127.0.0.1:" + sys.argv[1],
                               num_processes=2, process_id=int(sys.argv[2]))
    import numpy as np
    import shardviz as sv
    from jax.sharding import NamedSharding, PartitionSpec as P
    mesh = sv.Mesh(range(8), (2, 4), ("hosts", "model"))
    sh = NamedSharding(mesh.jax_mesh, P("hosts", "model"))
    x = jax.make_array_from_callback((8, 8), sh, lambda idx: np.ones((8, 8), np.float32)[idx])
    lay = sv.layout(x, name="x")
    total = float(jax.jit(lambda a: a.sum(), out_shardings=NamedSharding(mesh.jax_mesh, P()))(x))
    print(json.dumps({"mesh": json.loads(lay.mesh.to_json()), "text": str(lay.mesh),
                      "tiles": len(lay.tiles), "sum": total}))
    jax.distributed.shutdown()
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_show_hosts(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    port = str(_free_port())
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    env.pop("SHARDVIZ_TEST_DEVICES", None)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), port, str(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )  # fmt: skip
        for i in range(2)
    ]
    outs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=240)
        finally:
            p.kill()
        assert p.returncode == 0, err[-3000:]
        outs.append(json.loads(out.strip().splitlines()[-1]))
    for o in outs:
        procs_of = [d["process_index"] for d in o["mesh"]["devices"]]
        assert procs_of == [0, 0, 0, 0, 1, 1, 1, 1]
        assert o["tiles"] == 8 and o["sum"] == 64.0
    assert outs[0]["mesh"] == outs[1]["mesh"]
    assert "2 processes" in outs[0]["text"]
