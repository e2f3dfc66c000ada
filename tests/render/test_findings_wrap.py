"""The findings' text view keeps every line within 99 characters (a notebook wraps longer
ones mid-word): prose at word boundaries, titles under their words, a fix's code as code that
still pastes. Only a single word longer than a line may run past it.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap

import pytest

from shardviz.model import Findings
from shardviz.render.findings.text import LONGEST, code_lines, findings_text

from .findings_fixtures import findings, idle_axis, loop_collective, nasty_findings, no_findings

PAD = " " * 17
LONG_CODE = (
    "params['w3'] = jax.device_put(params['w3'], NamedSharding(mesh, P('data', None)))"
    "  # mesh: the Mesh your arrays are placed on (or wrap the call in "
    "`with jax.set_mesh(mesh):` and pass the P(...) alone)"
)


def _too_long(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line) > LONGEST]


@pytest.mark.parametrize("make", [findings, no_findings, nasty_findings])
def test_fixtures_print_no_line_over_99(make) -> None:
    assert LONGEST == 99
    assert _too_long(findings_text(make())) == []


def test_a_long_title_wraps_under_its_words() -> None:
    f = dataclasses.replace(idle_axis(), title="the devices along 'data' repeat the work " * 4)
    lines = findings_text(Findings("f", (f,))).split("\n\n")[1].splitlines()
    assert lines[0].startswith("1. info · idle-axis · the devices")
    assert lines[1].startswith("   the") and not lines[1].startswith("    ")
    assert lines[2].startswith("    No argument")  # the body keeps its own indent
    assert all(len(line) <= LONGEST for line in lines)


def test_a_number_stays_with_its_unit() -> None:
    f = loop_collective()
    assert f.check is not None
    verdict = "moved 6.1 MiB -> 608 KiB per device per step, " * 3
    f = dataclasses.replace(f, check=dataclasses.replace(f.check, verdict=verdict))
    text = findings_text(Findings("f", (f,)))
    assert _too_long(text) == []
    for line in text.splitlines():
        assert not line.rstrip().endswith(("6.1", "608")), line


def test_code_with_a_long_comment_keeps_the_statement_and_wraps_the_comment() -> None:
    lines = code_lines(LONG_CODE, PAD)
    assert lines[0] == PAD + LONG_CODE.split("  #")[0]
    assert all(line.startswith(PAD + "#") for line in lines[1:])
    assert all(len(line) <= LONGEST for line in lines)
    # the quoted span stays whole and no word is lost
    assert any("`with jax.set_mesh(mesh):`" in line for line in lines)
    comment = " ".join(line.strip().removeprefix("#").strip() for line in lines[1:])
    assert comment == LONG_CODE.split("  # ")[1]


def test_wrapped_code_is_the_same_python() -> None:
    code = (
        "state = jax.lax.with_sharding_constraint(state, NamedSharding(mesh, P('data, model', "
        "None)), donate_argnums=(0, 1), note='a # not a comment, nor a break')  # why: it is"
    )
    lines = code_lines(code, PAD)
    assert len(lines) > 2 and all(len(line) <= LONGEST for line in lines)
    body = textwrap.dedent("\n".join(lines))
    assert ast.dump(ast.parse(body)) == ast.dump(ast.parse(code))
    assert "'data, model'" in body and "'a # not a comment, nor a break'" in body
    assert lines[-1] == PAD + "# why: it is"


def test_a_comment_line_keeps_its_inner_comment_marker_with_its_word() -> None:
    code = "# delete: y = jax.lax.with_sharding_constraint(y, by_model)  # planted:reshard-chain"
    lines = code_lines(code, PAD)
    assert lines == [
        PAD + "# delete: y = jax.lax.with_sharding_constraint(y, by_model)",
        PAD + "#   # planted:reshard-chain",
    ]


def test_code_that_fits_is_printed_as_written() -> None:
    code = 'params["w1"] = jax.device_put(params["w1"], NamedSharding(mesh, P(None, "model")))'
    assert len(PAD + code) == LONGEST
    assert code_lines(code + "\n# then\n", PAD) == [PAD + code, PAD + "# then"]


def test_names_longer_than_a_line_do_not_break_anything() -> None:
    name = "a_function_named_by_someone_who_likes_long_names_" * 3
    assert len(name) > 100
    f = loop_collective()
    assert f.fix is not None
    f = dataclasses.replace(
        f,
        title=f"{name} is all-gathered inside the scan",
        where=dataclasses.replace(f.where, leaf=f"params/{name}", chain=f"{name} > {name}"),
        fix=dataclasses.replace(
            f.fix, code=f"{name} = jax.lax.with_sharding_constraint({name}, P(None, 'model'))"
        ),
    )
    text = findings_text(Findings(name, (f,), notes=(f"{name} {name}",)))
    for line in _too_long(text):  # only the unbreakable name runs past the line
        assert name in line and len(line.replace(name, "")) <= LONGEST, line
    assert text.count(name) >= 8
    assert code_lines("#", PAD) == [PAD + "#"]
    assert code_lines("x" * 120 + "  #", PAD) == [PAD + "x" * 120, PAD + "#"]


def test_a_list_of_source_lines_wraps_between_its_places_and_a_number_keeps_its_word() -> None:
    """A number stays with the word after it (``1,024 devices``), but a place that ends a
    clause (``planted.py:141,``) does not glue the list into one unbreakable word."""
    from shardviz.render.findings.text import _wrap

    places = ", ".join(f"tests/explainer/diagnose/planted.py:{n}" for n in (141, 142, 143))
    lines = _wrap(f"the values at {places}.", "    ")
    assert len(lines) > 1 and all(len(line) <= LONGEST for line in lines)
    kept = _wrap("x " * 40 + "over 1,024 devices and 12.5% of them", "    ")
    assert any("1,024 devices" in line for line in kept)
    assert any("12.5% of" in line for line in kept)
