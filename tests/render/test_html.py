"""The HTML views: structure, labels, escaping, no network, size at 2048 devices."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import pytest

from shardviz.errors import ShardvizError
from shardviz.model import MeshLayout, TreeLayout
from shardviz.model.units import format_bytes
from shardviz.render import array_html, mesh_html, page, tree_html
from shardviz.render.colors import device_color

from .fixtures import (
    make_layout,
    make_mesh,
    mesh_2x4,
    mesh_2x64,
    mesh_2x1024,
    mesh_3axis,
    mesh_4axis,
    tree_example,
    tree_uneven,
)

VOID = {"br", "meta", "rect", "path", "img", "hr", "input", "link"}


class Doc(HTMLParser):
    """Elements (tag, attrs) in order, visible text, and a check that tags balance."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.stack: list[str] = []
        self.feed(text)
        self.close()
        assert not self.stack, f"unclosed tags: {self.stack}"

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def with_class(self, cls: str) -> list[dict[str, str | None]]:
        return [a for _, a in self.elements if cls in (a.get("class") or "").split()]

    @property
    def all_text(self) -> str:
        return "".join(self.text)


def assert_offline(text: str) -> None:
    """No URL, no script, no import: the fragment needs nothing beyond itself."""
    low = text.lower()
    assert "http://" not in low and "https://" not in low
    assert "@import" not in low
    assert not re.search(r"url\(\s*['\"]?(?!#)", low)
    for tag, attrs in Doc(text).elements:
        assert tag not in ("script", "link", "iframe", "img", "object", "embed")
        for name in ("src", "href", "xlink:href", "srcset", "action"):
            assert name not in attrs, f"<{tag} {name}=...>"


# --------------------------------------------------------------------------------------------
# Meshes


@pytest.mark.parametrize(
    "mesh",
    [
        make_mesh((), ()),
        make_mesh(("x",), (4,)),
        mesh_2x4(),
        mesh_3axis(),
        mesh_4axis(),
        make_mesh(("data", "model"), (2, 4), processes=2),
    ],
    ids=["0axis", "1axis", "2axis", "3axis", "4axis", "2process"],
)
def test_mesh_html_one_cell_per_device(mesh: MeshLayout) -> None:
    out = mesh_html(mesh)
    doc = Doc(out)
    cells = doc.with_class("sv-device")
    assert sorted(int(c["data-device"]) for c in cells) == sorted(mesh.device_ids)
    for name, size in zip(mesh.axis_names, mesh.axis_sizes, strict=True):
        assert f"{name} ({size})" in doc.all_text or f"{name}=" in doc.all_text
    assert_offline(out)


def test_mesh_html_colours_and_coordinates() -> None:
    out = mesh_html(mesh_2x4())
    assert f'fill="{device_color(5)}"' in out
    text = Doc(out).all_text
    assert "(1, 1)" in text and "data=1, model=1" in text
    assert "Mesh ('data': 2, 'model': 4) · 8 devices · 1 process · cpu" in text


def test_mesh_html_processes_are_outlined() -> None:
    mesh = make_mesh(("data", "model"), (2, 4), processes=2)
    doc = Doc(mesh_html(mesh))
    assert len(doc.with_class("sv-proc")) == 2
    assert "p0 = d0-d3" in doc.all_text and "p1 = d4-d7" in doc.all_text
    assert not Doc(mesh_html(mesh_2x4())).with_class("sv-proc")


def test_mesh_html_2048_devices_is_compact() -> None:
    out = mesh_html(mesh_2x1024())
    doc = Doc(out)
    assert len(doc.with_class("sv-device")) == 20
    assert doc.with_class("sv-elided")
    assert "1014 more" in doc.all_text
    assert len(out.encode()) < 30_000


# --------------------------------------------------------------------------------------------
# Arrays

ARRAYS = {
    "0d": lambda: make_layout("s", (), (), mesh_2x4()),
    "1d": lambda: make_layout("b", (16,), ("model",), mesh_2x4()),
    "2d_tiled": lambda: make_layout("w", (8, 16), ("data", "model"), mesh_2x4()),
    "2d_partial": lambda: make_layout("x", (8, 16), ("data", None), mesh_2x4()),
    "2d_replicated": lambda: make_layout("r", (8, 16), (), mesh_2x4()),
    "3d": lambda: make_layout("a", (4, 8, 16), ("pipe", "data", "model"), mesh_3axis()),
    "4d": lambda: make_layout("k", (2, 4, 8, 16), ("a", "b", "c", "d"), mesh_4axis()),
    "uneven": lambda: make_layout("u", (10, 6), ("model", "data"), mesh_2x4()),
}


@pytest.mark.parametrize("name", sorted(ARRAYS))
def test_array_html_one_tile_per_distinct_tile(name: str) -> None:
    layout = ARRAYS[name]()
    out = array_html(layout)
    doc = Doc(out)
    tiles = doc.with_class("sv-tile")
    got = sorted(tuple(int(d) for d in t["data-devices"].split()) for t in tiles)
    want = sorted(tuple(t.device_id for t in g) for g in layout.distinct_tiles)
    assert got == want
    assert not doc.with_class("sv-elided")
    assert_offline(out)


def test_array_html_labels_and_hover_text() -> None:
    layout = ARRAYS["2d_partial"]()
    text = Doc(array_html(layout)).all_text
    assert "dim 0 (8) · 'data'" in text
    assert "dim 1 (16)" in text
    assert "P('data', None)" in text and "partially_tiled" in text
    # hover text of the first tile: index, shard shape, bytes, each holder and its coordinate
    assert "x[0:4, 0:16]" in text
    assert "shard (4, 16) · 256 B" in text
    assert "d2 (data=0, model=2)" in text
    assert "d0-d3" in text


def test_array_html_tile_fill_is_first_holder_with_chips() -> None:
    out = array_html(ARRAYS["1d"]())
    first = re.search(r'<g class="sv-tile" data-devices="0 4">(.*?)</g>', out, re.S).group(1)
    fills = re.findall(r'fill="(#[0-9a-f]{6})"', first)
    assert fills[0] == device_color(0)
    assert device_color(4) in fills[1:]  # a chip per holder


def test_array_html_chips_are_capped() -> None:
    layout = make_layout("r", (8, 16), (), make_mesh(("x",), (32,)))
    out = array_html(layout)
    assert out.count('class="sv-chip"') <= 8
    assert "+24" in Doc(out).all_text


def test_array_html_panels_for_nd() -> None:
    doc = Doc(array_html(ARRAYS["4d"]()))
    assert len(doc.with_class("sv-panel")) == 4
    assert "dim 0 = 1:2 · dim 1 = 2:4" in doc.all_text


def test_array_html_elided() -> None:
    layout = make_layout("big", (8, 512), ("data", "model"), mesh_2x64())
    doc = Doc(array_html(layout))
    assert len(doc.with_class("sv-tile")) == 20 < layout.num_distinct_tiles
    assert doc.with_class("sv-elided")
    assert "54 more intervals" in doc.all_text


def test_array_html_elided_panels() -> None:
    mesh = make_mesh(("x", "data", "model"), (16, 2, 2))
    doc = Doc(array_html(make_layout("s", (32, 4, 8), ("x", "data", "model"), mesh)))
    assert len(doc.with_class("sv-panel")) == 10
    assert "6 more panels" in doc.all_text


@pytest.mark.parametrize(
    "spec",
    [("data", "model"), (), ("data", None), (None, ("data", "model")), (("model", "data"), None)],
    ids=["tiled", "replicated", "partial", "flat_cols", "flat_rows"],
)
def test_array_html_2048_devices_is_small(spec: tuple) -> None:
    layout = make_layout("w", (4096, 8192), spec, mesh_2x1024())
    out = array_html(layout)
    assert len(out.encode()) <= 300_000
    assert len(out.encode()) <= 40_000  # what it is today, with room to spare
    assert len(Doc(out).with_class("sv-tile")) <= 100
    assert_offline(out)


# --------------------------------------------------------------------------------------------
# Trees


@pytest.mark.parametrize("tree", [tree_example(), tree_uneven()], ids=["even", "uneven"])
def test_tree_html_rows_and_bars(tree: TreeLayout) -> None:
    out = tree_html(tree)
    doc = Doc(out)
    assert len(doc.with_class("sv-leaf")) == len(tree)
    bars = doc.with_class("sv-bar")
    assert sorted(int(b["data-device"]) for b in bars) == list(tree.device_ids)
    for leaf in tree:
        assert leaf.name in doc.all_text
    assert "total:" in doc.all_text
    assert_offline(out)


def test_tree_html_2048_devices_bins_bars() -> None:
    mesh = mesh_2x1024()
    tree = TreeLayout(
        (
            make_layout("w", (4096, 8192), ("data", "model"), mesh),
            make_layout("b", (8192,), ("model",), mesh),
        )
    )
    out = tree_html(tree)
    doc = Doc(out)
    assert len(doc.with_class("sv-bar")) <= 256
    assert len(out.encode()) <= 100_000


def _bar_heights(out: str) -> dict[int, float]:
    return {int(b["data-device"]): float(b["height"]) for b in Doc(out).with_class("sv-bar")}


def test_tree_html_shared_scale_draws_two_trees_on_one_scale() -> None:
    # The same leaves, replicated and cut 8 ways: 8x fewer bytes per device when cut.
    mesh = mesh_2x4()
    whole = TreeLayout((make_layout("w", (8, 16), (), mesh),))
    cut = TreeLayout((make_layout("w", (8, 16), (("data", "model"), None), mesh),))
    top = max(whole.bytes_per_device.values())
    assert max(cut.bytes_per_device.values()) * 8 == top
    # Each on its own scale, the bars are equally tall (the trouble a shared scale fixes).
    assert set(_bar_heights(tree_html(whole)).values()) == set(
        _bar_heights(tree_html(cut)).values()
    )
    # On one scale, the cut tree's bars are an eighth of the replicated tree's.
    tall = _bar_heights(tree_html(whole, scale=top))
    short = _bar_heights(tree_html(cut, scale=top))
    assert tall == _bar_heights(tree_html(whole))  # the largest tree looks as before
    assert all(abs(short[d] * 8 - tall[d]) < 1e-6 for d in tall)
    assert format_bytes(top) in Doc(tree_html(cut, scale=top)).all_text  # the axis says so


@pytest.mark.parametrize("scale", [0, -1, 1.5, True, "big"])
def test_tree_html_scale_must_be_positive_bytes(scale: object) -> None:
    with pytest.raises(ShardvizError, match="scale=.*positive whole number"):
        tree_html(tree_example(), scale=scale)  # type: ignore[arg-type]


def test_tree_html_scale_below_a_device_says_the_fix() -> None:
    tree = tree_example()
    largest = max(tree.bytes_per_device.values())
    with pytest.raises(ShardvizError, match=f"at least {largest:,} B"):
        tree_html(tree, scale=largest - 1)


def test_tree_html_empty() -> None:
    doc = Doc(tree_html(TreeLayout(())))
    assert "0 leaves" in doc.all_text and not doc.with_class("sv-bar")


# --------------------------------------------------------------------------------------------
# Escaping and the standalone page

NASTY = ["<script>alert(1)</script>", "a\"b'c", "x&y"]


def nasty_mesh() -> MeshLayout:
    return make_mesh(NASTY, (2, 2, 2), platform="<b>cpu</b>", kind="k&<i>")


def test_every_model_string_is_escaped() -> None:
    mesh = nasty_mesh()
    layout = make_layout(
        "params['<script>alert(2)</script>']", (4, 4, 4), tuple(NASTY), mesh, dtype="<f4&"
    )
    tree = TreeLayout((layout, make_layout('leaf"<img src=x>', (4,), (NASTY[0],), mesh)))
    outputs = [mesh_html(mesh), array_html(layout), tree_html(tree), page("<t>&'\"", [])]
    for out in outputs:
        assert "<script" not in out.lower()
        assert "<img" not in out and "<b>" not in out and "<i>" not in out
        assert "x&y" not in out and 'a"b' not in out and "<f4" not in out
        assert "k&<" not in out
        Doc(out)  # still balanced
        assert_offline(out)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in outputs[0]
    assert "x&amp;y" in outputs[0]
    assert "&lt;b&gt;cpu&lt;/b&gt;" in outputs[0]
    assert "&lt;f4&amp;" in outputs[1]
    assert "leaf&quot;&lt;img src=x&gt;" in outputs[2]
    assert "&lt;t&gt;&amp;&#x27;&quot;" in outputs[3]
    # the text survives escaping: what a reader sees is the original string
    assert NASTY[0] in Doc(outputs[0]).all_text and "a\"b'c" in Doc(outputs[0]).all_text


def test_page_is_a_standalone_document() -> None:
    sections = [mesh_html(mesh_2x4()), array_html(ARRAYS["3d"]()), tree_html(tree_example())]
    out = page("shardviz report", sections)
    assert out.startswith("<!doctype html>")
    assert '<meta charset="utf-8">' in out
    assert out.count('<section class="sv-section">') == 3
    Doc(out)
    assert_offline(out)


def test_repr_html_uses_html_renderers() -> None:
    mesh = mesh_2x4()
    layout = ARRAYS["2d_tiled"]()
    assert mesh._repr_html_() == mesh_html(mesh)
    assert layout._repr_html_() == array_html(layout)
    assert tree_example()._repr_html_() == tree_html(tree_example())


def test_fragments_are_deterministic() -> None:
    layout = ARRAYS["4d"]()
    assert array_html(layout) == array_html(layout)
    assert html.escape("x") == "x"
