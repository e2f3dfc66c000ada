"""The battery's cases for device orders, output files and documents read back: an order is a
list of device ids (never a string read digit by digit, nor an endless iterator read for
ever), ``save_html`` writes whole or not at all, and ``from_json`` checks sizes and ranges
before anything is drawn."""

from __future__ import annotations

from tests.hostile.battery import Cases

#: A schedule to save and to read back.
_SCHEDULE = "from shardviz.model.schedule import Schedule, gpipe\ns = gpipe(2, 3)\n"
#: A report on the 8 fake CPU devices, laid out on a v5e 2x4 for ``sv.physical``.
_REPORT = "r = sv.explain(lambda a: a * 2, X, steps=1)\n"
#: A folder with a page already saved in it.
_SAVED = (
    "import os, tempfile\n"
    "d = tempfile.mkdtemp()\n"
    "p = os.path.join(d, 'page.html')\n"
    "open(p, 'w').write('old')\n"
)


def _refused(make: str, call: str, words: str) -> str:
    """Code whose outcome is ``True`` when ``call`` raises a ShardvizError holding ``words``."""
    return (
        f"{make}try:\n    {call}\n    msg = 'accepted'\n"
        f"except sv.ShardvizError as err:\n    msg = str(err)\n{words!r} in msg"
    )


#: name -> (code, expected): see :data:`tests.hostile.battery.Cases`.
CASES: Cases = {
    # -- device orders --------------------------------------------------------------------------
    "an order as a string of digits": ("sv.reordered_mesh(M, '76543210')", "MeshError"),
    "an order as bytes": ("sv.reordered_mesh(M, bytes([7, 6, 5, 4, 3, 2, 1, 0]))", "MeshError"),
    "an order as a set": ("sv.reordered_mesh(M, set(range(8)))", "MeshError"),
    "an order of fractional floats": (
        "sv.reordered_mesh(M, [7.9, 6.1, 5, 4, 3, 2, 1, 0.5])",
        "MeshError",
    ),
    "an order of booleans": ("sv.reordered_mesh(M, [True, False, 2, 3, 4, 5, 6, 7])", "MeshError"),
    "an endless order": (
        "import itertools\nsv.reordered_mesh(M, itertools.repeat(0))",
        "MeshError",
    ),
    "200,000 repeated ids": ("sv.reordered_mesh(M, [0] * 200_000)", "MeshError"),
    "an order as a numpy int array": (
        "[d.id for d in sv.reordered_mesh(M, np.arange(8)[::-1]).devices.flat] == "
        "[7, 6, 5, 4, 3, 2, 1, 0]",
        "True",
    ),
    "an order of numpy integers": (
        "[d.id for d in sv.reordered_mesh(M, [np.int32(i) for i in range(7, -1, -1)])"
        ".devices.flat][0] == 7",
        "True",
    ),
    "physical of None": ("sv.physical(None)", "ArgumentError"),
    "physical of a string": ("sv.physical('report')", "ArgumentError"),
    "physical with an order as a string": (
        _REPORT + "sv.physical(r, target='v5e:2x4', order='76543210')",
        "MeshError",
    ),
    "physical with an endless order": (
        _REPORT + "import itertools\nsv.physical(r, target='v5e:2x4', order=itertools.repeat(0))",
        "MeshError",
    ),
    "physical with a numpy order": (
        _REPORT + "sv.physical(r, target='v5e:2x4', order=np.arange(8)[::-1]).mesh.device_ids"
        " == (7, 6, 5, 4, 3, 2, 1, 0)",
        "True",
    ),
    # -- files ----------------------------------------------------------------------------------
    "save_html to None": (_SCHEDULE + "s.save_html(None)", "ArgumentError"),
    "save_html to a folder": (
        _SCHEDULE + "import tempfile\ns.save_html(tempfile.mkdtemp())",
        "ArgumentError",
    ),
    "save_html into a missing folder": (
        _SCHEDULE + "import tempfile, os\n"
        "s.save_html(os.path.join(tempfile.mkdtemp(), 'no', 'such', 'page.html'))",
        "ArgumentError",
    ),
    "save_html whose drawing fails keeps the old file": (
        _SCHEDULE + _SAVED + "from shardviz.model import display\n"
        "real = display.render\n"
        "display.render = lambda obj, fmt: 1 / 0\n"
        "try:\n    s.save_html(p)\nexcept ZeroDivisionError:\n    pass\n"
        "finally:\n    display.render = real\n"
        "open(p).read() == 'old' and os.listdir(d) == ['page.html']",
        "True",
    ),
    "save_html of a report replaces the old file": (
        _REPORT + _SAVED + "r.save_html(p) == p and open(p).read() != 'old' and "
        "os.listdir(d) == ['page.html']",
        "True",
    ),
    "the workshop over a broken link": (
        "import os, tempfile\nfrom pathlib import Path\nfrom shardviz import workshop\n"
        "t = Path(tempfile.mkdtemp())\n(t / 'src').mkdir()\n(t / 'me').mkdir()\n"
        "(t / 'src' / '01_one.ipynb').write_text('{}')\n"
        "(t / 'me' / '01_one.ipynb').symlink_to(t / 'gone.ipynb')\n"
        "workshop.copy_notebooks(t / 'me', t / 'src').relinked == ('01_one.ipynb',)",
        "True",
    ),
    # -- documents read back --------------------------------------------------------------------
    "a serving comparison of 10**400 weight bytes": (
        "import json\n"
        "t = json.dumps({**json.loads(sv.ServingComparison('m', 1, 1.0, 1, ()).to_json()), "
        "'weight_bytes_total': 10**400})\n"
        "sv.ServingComparison.from_json(t)",
        "ShardvizError",
    ),
    "the field past 2**63 is named": (
        _refused(
            "import json\n"
            "t = json.dumps({**json.loads(sv.ServingComparison('m', 1, 1.0, 1, ()).to_json()), "
            "'weight_bytes_total': 10**400})\n",
            "sv.ServingComparison.from_json(t)",
            "weight_bytes_total: a whole number of 401 digits",
        ),
        "True",
    ),
    "a serving comparison nested 10,000 deep": (
        "sv.ServingComparison.from_json('{\"model\": ' + '[' * 10000 + ']' * 10000 + '}')",
        "ShardvizError",
    ),
    "a slice choice nested 10,000 deep": (
        "sv.SliceChoice.from_json('[' * 10000 + ']' * 10000)",
        "ShardvizError",
    ),
    "a comparison nested 10,000 deep": (
        "sv.Comparison.from_json('{\"results\": ' + '[' * 10000 + ']' * 10000 + '}')",
        "ShardvizError",
    ),
    "a search nested 10,000 deep": ("sv.Search.from_json('[' * 10000)", "ShardvizError"),
    "a physical layout nested 10,000 deep": (
        "sv.PhysicalLayout.from_json('{\"a\": ' * 10000 + '1' + '}' * 10000)",
        "ShardvizError",
    ),
    "a comparison of 10**400 parameters": (
        _refused(
            "import json\n",
            "sv.Comparison.from_json(json.dumps({**json.loads(sv.Comparison('m', 1, 'f32', ())"
            ".to_json()), 'num_params': 10**400}))",
            "num_params: a whole number of 401 digits",
        ),
        "True",
    ),
    "a search with an infinite budget": (
        _refused(
            "import json\n",
            "sv.Search.from_json(json.dumps({**json.loads(sv.Search('f', None, (), 'r')"
            ".to_json()), 'budget_seconds': float('inf')}))",
            "budget_seconds: inf is not a finite number",
        ),
        "True",
    ),
    "a physical layout of 10**400 link bytes": (
        _refused(
            _REPORT + "import json\ndoc = json.loads(sv.physical(r, target='v5e:2x4').to_json())\n",
            "sv.PhysicalLayout.from_json(json.dumps({**doc, 'link_bytes': 10**400}))",
            "link_bytes: a whole number of 401 digits",
        ),
        "True",
    ),
    "a slice choice with NaN weight bytes": (
        _refused(
            "import json\n"
            "c = sv.SliceChoice('m', 'v5e', 'v5e:2x4', 8, 'int8', 'int8', 8, 4096, 1, 1, 1, 1)\n",
            "sv.SliceChoice.from_json(c.to_json().replace('\"kv_bytes\": 1', '\"kv_bytes\": NaN'))",
            "kv_bytes: expected int, got nan",
        ),
        "True",
    ),
    "a schedule of a million stages": (
        _SCHEDULE + "import json\n"
        "Schedule.from_json(json.dumps({**json.loads(s.to_json()), 'stages': 10**6}))",
        "ShardvizError",
    ),
    "a schedule read back whole": (_SCHEDULE + "Schedule.from_json(s.to_json()) == s", "True"),
}
