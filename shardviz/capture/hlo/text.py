"""HLO module text -> plain Python structures: computations, instructions, shapes, sources.

Pure text parsing (standard library only, no jax): it reads what ``compiled.as_text()`` prints
after SPMD partitioning, and the ``*after_shardy-xla.before_spmd-partitioning.txt`` dump.

What it understands (checked against jax/jaxlib 0.10.2 output and XLA's printer):

- the ``HloModule`` header line and its attributes (``num_partitions``, ``replica_count``, ...);
- the ``FileNames`` / ``FunctionNames`` / ``FileLocations`` / ``StackFrames`` tables that
  metadata ``stack_frame_id`` points into. The printed ``parent_frame_id`` is one more than the
  parent's id (``1`` means "no parent"), so a frame's parent is ``parent_frame_id - 1``;
- every computation (``ENTRY`` and the called ones: fusions, while bodies, reductions, async
  wrappers), each instruction with its name, opcode, result shape (tuple shapes included, with
  their spaces and ``/*index=5*/`` comments), operand names, attributes and metadata;
- instructions written over several lines (hand-written HLO), typed operands
  (``all-gather-done(f32[8] %start)``) and names with or without ``%``.

Instruction names are unique in an HLO module, so one name -> instruction table serves every
computation (collective lines do not print their operands' shapes: look them up there).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from shardviz.errors import HloParseError, problem
from shardviz.model import Frame, Source

__all__ = [
    "ArrayShape",
    "HloComputation",
    "HloInstruction",
    "HloModule",
    "HloParseError",
    "Shape",
    "array_leaves",
    "compiler_versions",
    "dtype_name",
    "parse_hlo_module",
    "parse_int_list",
    "parse_int_lists",
    "parse_shape",
    "split_top_level",
    "tuple_element",
]


# HLO primitive type -> (numpy/jax spelling, bits per element).
_DTYPES: dict[str, tuple[str, int]] = {
    "pred": ("bool", 8),
    "s1": ("int1", 1),
    "s2": ("int2", 2),
    "s4": ("int4", 4),
    "s8": ("int8", 8),
    "s16": ("int16", 16),
    "s32": ("int32", 32),
    "s64": ("int64", 64),
    "u1": ("uint1", 1),
    "u2": ("uint2", 2),
    "u4": ("uint4", 4),
    "u8": ("uint8", 8),
    "u16": ("uint16", 16),
    "u32": ("uint32", 32),
    "u64": ("uint64", 64),
    "f16": ("float16", 16),
    "bf16": ("bfloat16", 16),
    "f32": ("float32", 32),
    "f64": ("float64", 64),
    "c64": ("complex64", 64),
    "c128": ("complex128", 128),
    "f4e2m1fn": ("float4_e2m1fn", 4),
    "f8e3m4": ("float8_e3m4", 8),
    "f8e4m3": ("float8_e4m3", 8),
    "f8e4m3fn": ("float8_e4m3fn", 8),
    "f8e4m3b11fnuz": ("float8_e4m3b11fnuz", 8),
    "f8e4m3fnuz": ("float8_e4m3fnuz", 8),
    "f8e5m2": ("float8_e5m2", 8),
    "f8e5m2fnuz": ("float8_e5m2fnuz", 8),
    "f8e8m0fnu": ("float8_e8m0fnu", 8),
    "token": ("token", 0),
}


def dtype_name(hlo_type: str) -> str:
    """An HLO element type in numpy/jax spelling (``f32`` -> ``float32``); unknown ones as is."""
    return _DTYPES.get(hlo_type, (hlo_type, 0))[0]


@dataclass(frozen=True)
class ArrayShape:
    """One array shape as HLO prints it: element type (HLO spelling) and dims.

    ``memory_space`` is the layout's ``S(n)`` (0 when none): where the compiler placed the
    buffer. 0 is the device's main memory (HBM); on TPU, 1 is on-chip VMEM and 5 is host
    memory. Not part of equality: the same array wherever it lives.
    """

    type: str
    dims: tuple[int, ...]
    memory_space: int = field(default=0, compare=False)

    @property
    def dtype(self) -> str:
        """The element type in numpy/jax spelling, e.g. ``float32``."""
        return dtype_name(self.type)

    @property
    def size(self) -> int:
        return math.prod(self.dims)

    @property
    def nbytes(self) -> int:
        """Bytes of the array (sub-byte types rounded up to whole bytes)."""
        bits = _DTYPES.get(self.type, ("", 0))[1]
        return (self.size * bits + 7) // 8

    def __str__(self) -> str:
        return f"{self.type}[{','.join(map(str, self.dims))}]"


#: A result shape: one array, or a (possibly nested) tuple of shapes.
Shape = ArrayShape | tuple


def array_leaves(shape: Shape) -> tuple[ArrayShape, ...]:
    """The arrays of a shape, depth first (a tuple's elements in order)."""
    if isinstance(shape, ArrayShape):
        return (shape,)
    return tuple(leaf for s in shape for leaf in array_leaves(s))


_ARRAY_RE = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]")
_MEMORY_SPACE_RE = re.compile(r"S\((\d+)\)")


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def parse_shape(text: str) -> Shape:
    """``f32[2,3]{1,0}`` -> ArrayShape; ``(f32[2]{0}, /*index=1*/s32[])`` -> tuple of shapes.

    Layouts (``{1,0}``, ``{1,0:T(8,128)}``) and dynamic-dim markers (``<=``) are dropped.
    """
    shape, rest = _parse_shape_prefix(_strip_comments(text).strip())
    if rest.strip():
        raise HloParseError(
            problem("parse_shape", f"unexpected text after the shape in {text!r}", "pass one shape")
        )
    return shape


def _parse_shape_prefix(text: str) -> tuple[Shape, str]:
    """Parse one shape at the start of ``text``; return it and the text after it."""
    text = text.lstrip()
    if text.startswith("("):
        end = _matching(text, 0)
        inner = text[1:end]
        elements = []
        for piece in split_top_level(inner):
            if piece.strip():
                elements.append(parse_shape(piece))
        return tuple(elements), text[end + 1 :]
    m = _ARRAY_RE.match(text)
    if not m:
        raise HloParseError(
            problem("parse_shape", f"no HLO shape at {text[:60]!r}", "check the HLO text")
        )
    dims_text = m.group(2).replace("<=", "").replace("?", "")
    dims = tuple(int(d) for d in dims_text.split(",") if d.strip())
    rest = text[m.end() :]
    space = 0
    if rest.startswith("{"):  # layout
        end = _matching(rest, 0)
        found = _MEMORY_SPACE_RE.search(rest, 0, end)
        space = int(found.group(1)) if found else 0
        rest = rest[end + 1 :]
    return ArrayShape(m.group(1), dims, space), rest


_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {")", "]", "}"}


# The characters that matter to bracket matching, and whole double-quoted strings (with
# escapes) so brackets inside them are skipped: scanning these tokens with one compiled regex
# is several times faster than stepping through every character in Python.
_TOKENS: dict[str, re.Pattern[str]] = {}


def _tokens(sep: str) -> re.Pattern[str]:
    pat = _TOKENS.get(sep)
    if pat is None:
        pat = _TOKENS[sep] = re.compile(r'"(?:[^"\\]|\\.)*"?|[()\[\]{}' + re.escape(sep) + "]")
    return pat


# A bracketed group with no bracket of its kind nested inside (outside strings): one regex
# match finds its end in C. Most groups are like this (operand lists, metadata, shardings of
# arrays); nested ones fall back to the token scan below.
_FLAT_GROUP = {
    o: re.compile(
        re.escape(o) + r'(?:[^"' + re.escape(o + c) + r']|"(?:[^"\\]|\\.)*")*' + re.escape(c)
    )
    for o, c in (("(", ")"), ("[", "]"), ("{", "}"))
}


def _matching(text: str, start: int) -> int:
    """Index of the bracket closing the one at ``start`` (strings in double quotes skipped)."""
    flat = _FLAT_GROUP.get(text[start : start + 1])
    if flat is not None:
        m = flat.match(text, start)
        if m:
            return m.end() - 1
    depth = 0
    for m in _tokens(",").finditer(text, start):
        c = m.group()
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            if depth == 0:
                return m.start()
    raise HloParseError(
        problem(
            "HLO text", f"unbalanced brackets in {text[start : start + 80]!r}", "check the text"
        )
    )


_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"?')


def _depth_change(text: str) -> int:
    """Net bracket depth of a text (strings in double quotes skipped)."""
    if '"' in text:
        # Balanced as a whole means balanced outside the strings too: a statement's quoted
        # parts cannot be unbalanced by exactly what its code lacks. Only count again when
        # the whole is unbalanced.
        if not _raw_depth(text):
            return 0
        text = _QUOTED.sub("", text)
    return _raw_depth(text)


def _raw_depth(text: str) -> int:
    return (
        text.count("(") + text.count("[") + text.count("{")
        - text.count(")") - text.count("]") - text.count("}")
    )  # fmt: skip


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside brackets and double-quoted strings."""
    parts: list[str] = []
    depth = 0
    start = 0
    for m in _tokens(sep).finditer(text):
        c = m.group()
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start : m.start()])
            start = m.end()
    parts.append(text[start:])
    return parts


def parse_int_list(text: str) -> tuple[int, ...]:
    """``{0,1,2}`` or ``[0,1,2]`` or ``0,1,2`` -> ``(0, 1, 2)``."""
    return tuple(int(v) for v in re.findall(r"-?\d+", text))


def parse_int_lists(text: str) -> tuple[tuple[int, ...], ...]:
    """``{{0,1},{2,3}}`` -> ``((0, 1), (2, 3))``; ``{}`` -> ``()``."""
    return tuple(parse_int_list(m) for m in re.findall(r"\{([^{}]*)\}", text.strip()[1:-1]))


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            nxt = text[i + 1]
            out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


_KV_RE = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^\s}]+)')


def _parse_metadata(text: str) -> dict[str, str]:
    """``{op_name="a/b" stack_frame_id=3}`` -> ``{"op_name": "a/b", "stack_frame_id": "3"}``."""
    out = {}
    for key, value in _KV_RE.findall(text):
        if value.startswith('"'):
            value = _unescape(value[1:-1])
        out[key] = value
    return out


@dataclass(frozen=True)
class HloInstruction:
    """One HLO instruction as printed.

    Only the name and the opcode are read up front; the shape, the operands and the
    attributes are read from the statement's text on first use: a program has thousands of
    instructions and most are never asked for more than their opcode.
    """

    name: str
    opcode: str
    computation: str = ""
    is_root: bool = False
    #: The statement after ``name =``: shape, opcode, ``(operands)``, attributes.
    body: str = field(default="", repr=False, compare=False)
    #: Where the shape ends and where the operand list opens, in ``body``.
    shape_end: int = field(default=0, repr=False, compare=False)
    operands_open: int = field(default=0, repr=False, compare=False)

    @cached_property
    def shape(self) -> Shape:
        return _parse_shape_prefix(self.body[: self.shape_end])[0]

    @cached_property
    def _operands_close(self) -> int:
        return _matching(self.body, self.operands_open)

    @property
    def operand_text(self) -> str:
        return self.body[self.operands_open + 1 : self._operands_close]

    @property
    def attr_text(self) -> str:
        return self.body[self._operands_close + 1 :]

    @cached_property
    def operands(self) -> tuple[str, ...]:
        """Names of the operands (without ``%``); none for literal-taking opcodes."""
        if self.opcode in _LITERAL_OPERANDS:
            return ()
        text = self.operand_text
        if not text.strip():
            return ()
        out = []
        for piece in split_top_level(text):
            piece = piece.strip()
            if piece:
                out.append(piece.rsplit(None, 1)[-1].lstrip("%"))
        return tuple(out)

    @cached_property
    def attrs(self) -> dict[str, str]:
        """``key=value`` attributes as text (``metadata`` unparsed: see :attr:`metadata`)."""
        return _parse_attrs(self.attr_text)

    def _braced_attr(self, key: str) -> str | None:
        """A ``key={...}`` attribute read without parsing the others.

        XLA prints ``sharding`` and ``metadata`` before any other quoted attribute, so when no
        quote comes before ``key={`` it is the attribute itself, not text inside a string.
        Falls back to :attr:`attrs`.
        """
        if "attrs" not in self.__dict__:
            text = self.attr_text
            at = text.find(key + "={")
            if at >= 0 and '"' not in text[:at] and (at == 0 or text[at - 1] in ", "):
                start = at + len(key) + 1
                return text[start : _matching(text, start) + 1]
        return self.attrs.get(key)

    @cached_property
    def sharding(self) -> str | None:
        """The ``sharding={...}`` attribute as printed, ``None`` without one."""
        return self._braced_attr("sharding")

    @cached_property
    def metadata(self) -> dict[str, str]:
        """The fields of ``metadata={...}`` (op_name, stack_frame_id, source_file, ...)."""
        return _parse_metadata(self._braced_attr("metadata") or "")

    @cached_property
    def operand_shapes(self) -> tuple[Shape | None, ...]:
        """Shapes printed inline with the operands (``op(f32[8] %x)``), where HLO shows them."""
        if self.opcode in _LITERAL_OPERANDS:
            return ()
        out: list[Shape | None] = []
        for piece in split_top_level(self.operand_text):
            piece = piece.strip()
            if not piece:
                continue
            tokens = piece.rsplit(None, 1)
            inline: Shape | None = None
            if len(tokens) == 2:
                try:
                    inline = parse_shape(tokens[0])
                except HloParseError:
                    inline = None
            out.append(inline)
        return tuple(out)

    @property
    def op_name(self) -> str:
        return self.metadata.get("op_name", "")

    @property
    def spmd_generated(self) -> bool:
        """Whether the SPMD partitioner made this op (``frontend_attributes={is_spmd_generated=
        "true"}``: XLA of jax 0.12 marks them; XLA of jax 0.10.2 printed no such mark)."""
        return 'is_spmd_generated="true"' in self.body

    @property
    def stack_frame_id(self) -> int | None:
        v = self.metadata.get("stack_frame_id")
        return int(v) if v is not None and v.isdigit() else None

    @cached_property
    def called_computations(self) -> tuple[str, ...]:
        """Names of the computations this instruction calls (``calls=``, ``body=``, ...)."""
        if "attrs" not in self.__dict__ and not _CALL_KEY_RE.search(self.body, self.operands_open):
            # No key in the text at all: most instructions call nothing, and parsing their
            # attributes only to find that out was most of a large program's caller map.
            return ()
        # The keys are printed before the free-text attributes (metadata, backend and
        # front-end attributes), so the text up to them is read with one regex instead of
        # parsing every attribute (most of a large module's caller map, ~1.6k fusions).
        text = self.body[self._operands_close + 1 :]
        cut = min((i for i in map(text.find, _FREE_TEXT_KEYS) if i >= 0), default=len(text))
        found: dict[str, list[str]] = {}
        for m in _CALL_VALUE_RE.finditer(text, 0, cut):
            value = m.group(2)
            names = value.strip("{}").split(",") if value.startswith("{") else [value]
            found.setdefault(m.group(1), []).extend(
                n.strip().lstrip("%") for n in names if n.strip()
            )
        return tuple(n for key in _CALL_ORDER for n in found.get(key, ()))


@dataclass
class HloComputation:
    """A named computation: the entry, or one it calls (fusion, while body, reduction, ...)."""

    name: str
    instructions: list[HloInstruction]
    is_entry: bool = False

    @property
    def root(self) -> HloInstruction | None:
        for ins in self.instructions:
            if ins.is_root:
                return ins
        return self.instructions[-1] if self.instructions else None


@dataclass
class _Tables:
    file_names: dict[int, str] = field(default_factory=dict)
    function_names: dict[int, str] = field(default_factory=dict)
    file_locations: dict[int, dict[str, str]] = field(default_factory=dict)
    stack_frames: dict[int, dict[str, str]] = field(default_factory=dict)


@dataclass
class HloModule:
    """A parsed HLO module: header attributes, computations, and the stack-frame tables."""

    name: str
    attrs: dict[str, str]
    computations: list[HloComputation]
    tables: _Tables = field(default_factory=_Tables, repr=False)
    _by_name: dict[str, HloInstruction] = field(default_factory=dict, repr=False)
    _sources: dict[int, Source | None] = field(default_factory=dict, repr=False)

    _users: dict[str, list[HloInstruction]] | None = field(default=None, repr=False)
    _callers: dict[str, list[HloInstruction]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for comp in self.computations:
            for ins in comp.instructions:
                self._by_name.setdefault(ins.name, ins)

    @property
    def entry(self) -> HloComputation:
        for comp in self.computations:
            if comp.is_entry:
                return comp
        if not self.computations:
            raise HloParseError(
                problem("HLO module", "it has no computations", "pass the full module text")
            )
        return self.computations[-1]

    @property
    def num_partitions(self) -> int:
        return int(self.attrs.get("num_partitions", "1"))

    @property
    def replica_count(self) -> int:
        return int(self.attrs.get("replica_count", "1"))

    @property
    def num_devices(self) -> int:
        """Devices the program runs on: partitions x replicas."""
        return self.num_partitions * self.replica_count

    def computation(self, name: str) -> HloComputation | None:
        name = name.lstrip("%")
        for comp in self.computations:
            if comp.name == name:
                return comp
        return None

    def instructions(self) -> Iterator[HloInstruction]:
        """Every instruction of every computation, computations in printed order."""
        for comp in self.computations:
            yield from comp.instructions

    def instruction(self, name: str) -> HloInstruction | None:
        return self._by_name.get(name.lstrip("%"))

    def shape_of(self, name: str) -> Shape | None:
        """The result shape of the instruction called ``name`` (``None`` if unknown); for
        ``name#i`` (one element of a tuple-shaped result), that element's shape."""
        ins = self.instruction(name)
        if ins is not None:
            return ins.shape
        element = tuple_element(name.lstrip("%"))
        if element is None:
            return None
        whole = self.shape_of(element[0])
        return whole[element[1]] if isinstance(whole, tuple) and element[1] < len(whole) else None

    def operand_shapes(self, ins: HloInstruction) -> tuple[Shape | None, ...]:
        """Shapes of an instruction's operands: looked up by name, else the inline ones."""
        out = []
        for i, name in enumerate(ins.operands):
            shape = self.shape_of(name)
            if shape is None and i < len(ins.operand_shapes):
                shape = ins.operand_shapes[i]
            out.append(shape)
        return tuple(out)

    def callers(self) -> dict[str, list[HloInstruction]]:
        """Computation name -> every instruction that calls it (fusions, loops, reducers,
        async wrappers, branches), in printed order; worked out once per module."""
        if self._callers is None:
            self._callers = {}
            for ins in self.instructions():
                for name in ins.called_computations:
                    self._callers.setdefault(name, []).append(ins)
        return self._callers

    def named(self, ins: HloInstruction) -> HloInstruction:
        """``ins``, or where it has no ``op_name`` the nearest op around it that has one (a
        fusion, a loop): compilers keep the metadata on the op they moved others into."""
        current, seen = ins, set()
        while not current.op_name and current.computation not in seen:
            seen.add(current.computation)
            outer = self.callers().get(current.computation)
            if not outer:
                break
            current = outer[0]
        return current if current.op_name else ins

    def users(self, name: str) -> list[HloInstruction]:
        """Instructions that take ``name`` as an operand.

        The index is built on first use from the ``%name`` tokens of each statement (cheap:
        no operand list is parsed); a candidate is confirmed against its parsed operands.
        """
        if self._users is None:
            self._users = {}
            for ins in self.instructions():
                tokens = _NAME_TOKEN_RE.findall(ins.body) if "%" in ins.body else ins.operands
                for token in dict.fromkeys(tokens):
                    self._users.setdefault(token, []).append(ins)
                    element = tuple_element(token)
                    if element is not None:  # `%x#0` uses x too
                        self._users.setdefault(element[0], []).append(ins)
        name = name.lstrip("%")
        return [
            ins
            for ins in dict.fromkeys(self._users.get(name, ()))
            if name in ins.operands
            or any((tuple_element(o) or ("",))[0] == name for o in ins.operands)
        ]

    def frame_chain(self, frame_id: int) -> tuple[Frame, ...]:
        """The call chain of a stack frame id, outermost first."""
        frames: list[Frame] = []
        seen: set[int] = set()
        fid = frame_id
        while fid and fid in self.tables.stack_frames and fid not in seen:
            seen.add(fid)
            entry = self.tables.stack_frames[fid]
            loc = self.tables.file_locations.get(int(entry.get("file_location_id", "0")), {})
            frames.append(
                Frame(
                    file=self.tables.file_names.get(int(loc.get("file_name_id", "0")), "?"),
                    line=int(loc.get("line", "0")),
                    function=self.tables.function_names.get(
                        int(loc.get("function_name_id", "0")), "?"
                    ),
                    column=int(loc.get("column", "0")),
                )
            )
            # The printer shows the parent one higher than its id: 1 means "no parent".
            fid = int(entry.get("parent_frame_id", "0")) - 1
        return tuple(reversed(frames))

    def source_of(self, ins: HloInstruction) -> Source | None:
        """Where an instruction came from: its stack frame's chain, or the older
        ``source_file``/``source_line`` metadata; ``None`` when the metadata has neither."""
        fid = ins.stack_frame_id
        if fid is not None:
            if fid not in self._sources:
                chain = self.frame_chain(fid)
                self._sources[fid] = Source(chain) if chain else None
            if self._sources[fid] is not None:
                return self._sources[fid]
        if "source_file" in ins.metadata:
            line = ins.metadata.get("source_line", "0")
            return Source(
                (Frame(ins.metadata["source_file"], int(line) if line.isdigit() else 0, "?"),)
            )
        return None


_TABLES = {
    "FileNames": "file_names",
    "FunctionNames": "function_names",
    "FileLocations": "file_locations",
    "StackFrames": "stack_frames",
}


def tuple_element(name: str) -> tuple[str, int] | None:
    """``"fusion.17#0"`` -> ``("fusion.17", 0)``: an operand written as one element of a
    tuple-shaped result, with no get-tuple-element op (the XLA of jax 0.12 prints operands so
    in its dumps, e.g. TPU ``*after_optimizations.txt``; jax 0.10.2 never did). ``None`` for a
    plain name."""
    base, sep, index = name.rpartition("#")
    return (base, int(index)) if sep and base and index.isdigit() else None


_NAME_TOKEN_RE = re.compile(r"%([^\s,(){}\[\]=]+)")
_INSTR_RE = re.compile(r"^(ROOT\s+)?%?([^\s=]+)\s*=\s*")
_OPCODE_RE = re.compile(r"\s*([A-Za-z][\w\-\.]*)\s*\(")
# Opcodes whose parenthesised part is not a list of operand names.
_LITERAL_OPERANDS = {"constant", "parameter", "iota", "rng-get-and-update-state"}
#: The attribute keys that name called computations, as printed (``key=``).
_CALL_KEYS = (
    "calls=", "to_apply=", "body=", "condition=", "branch_computations=",
    "called_computations=", "true_computation=", "false_computation=",
)  # fmt: skip
#: The keys whose value is one computation or a ``{list}`` of them: a custom call's
#: ``called_computations`` (the CPU compiler's ``TopK`` names its comparator so).
_LIST_CALL_KEYS = (
    "calls", "to_apply", "body", "condition", "branch_computations", "called_computations",
)  # fmt: skip
_CALL_KEY_RE = re.compile("|".join(re.escape(k) for k in _CALL_KEYS))
#: The called computations in the order they are given (lists, then a conditional's two).
_CALL_ORDER = (*_LIST_CALL_KEYS, "true_computation", "false_computation")
_CALL_VALUE_RE = re.compile(r"(?:^|,)\s*(" + "|".join(_CALL_ORDER) + r")=(\{[^{}]*\}|%?[\w.\-]+)")
#: Attributes whose values are free text (quoted strings, JSON), printed after the calls.
_FREE_TEXT_KEYS = (", metadata=", ", backend_config=", ", frontend_attributes=")


def _shape_end(text: str) -> int:
    """Where the shape at the start of ``text`` ends (tuple, or array with its layout)."""
    if text.startswith("("):
        return _matching(text, 0) + 1
    m = _ARRAY_RE.match(text)
    if not m:
        raise HloParseError(
            problem("parse_shape", f"no HLO shape at {text[:60]!r}", "check the HLO text")
        )
    end = m.end()
    if text.startswith("{", end):  # layout
        end = _matching(text, end) + 1
    return end


def _parse_instruction(stmt: str, computation: str) -> HloInstruction:
    m = _INSTR_RE.match(stmt)
    if not m:
        raise HloParseError(
            problem("HLO instruction", f"cannot read {stmt[:80]!r}", "check the HLO text")
        )
    body = stmt[m.end() :]
    shape_end = _shape_end(body)
    om = _OPCODE_RE.match(body, shape_end)
    if not om:
        raise HloParseError(
            problem("HLO instruction", f"no opcode in {stmt[:80]!r}", "check the HLO text")
        )
    return HloInstruction(
        name=m.group(2).lstrip("%"),
        opcode=om.group(1),
        computation=computation,
        is_root=bool(m.group(1)),
        body=body,
        shape_end=shape_end,
        operands_open=om.end() - 1,
    )


def _parse_attrs(attr_text: str) -> dict[str, str]:
    """An instruction's attributes (``key=value``), values as printed."""
    attrs: dict[str, str] = {}
    last_key = None
    for piece in split_top_level(attr_text):
        piece = piece.strip()
        if not piece:
            continue
        key, eq, value = piece.partition("=")
        key = key.strip()
        if not eq:
            attrs[key] = ""
            continue
        if key == "device_ids" and last_key == "replica_groups":
            # ``replica_groups=mesh[...], device_ids=(...) {axes}``: one value, split by the comma.
            attrs["replica_groups"] += ", " + piece
            continue
        attrs[key] = value.strip()
        last_key = key
    return attrs


def _open_computation(line: str) -> HloComputation | None:
    """The computation a header line (``ENTRY %main (...) -> f32[] {``) opens; ``None`` for
    any other line outside a computation."""
    if not line.endswith("{") or line.startswith("HloModule") or _depth_change(line[:-1]):
        return None
    header = line[:-1].strip()
    is_entry = header.startswith("ENTRY")
    if is_entry:
        header = header[len("ENTRY") :].strip()
    m = re.match(r"%?([^\s(]+)", header)
    return HloComputation(m.group(1) if m else header, [], is_entry)


def _parse_header(stmt: str) -> tuple[str, dict[str, str]]:
    """``HloModule name, key=value, ...`` -> the module's name and its attributes."""
    parts = split_top_level(stmt[len("HloModule") :])
    attrs: dict[str, str] = {}
    for part in parts[1:]:
        k, _, v = part.strip().partition("=")
        attrs[k.strip()] = v.strip()
    return parts[0].strip(), attrs


def _name_value(text: str) -> str:
    """A ``FileNames``/``FunctionNames`` value: a quoted string, or a bare word."""
    return _unescape(text[1:-1]) if text.startswith('"') else text


#: A row of a stack-frame table: ``<id> <value>``.
_TABLE_ROW_RE = re.compile(r"(\d+)\s+(.*)$")
#: How each table's values read.
_TABLE_VALUES = {
    "file_names": _name_value,
    "function_names": _name_value,
    "file_locations": _parse_metadata,
    "stack_frames": _parse_metadata,
}


def compiler_versions() -> str:
    """``"jax 0.12.0.1, jaxlib 0.12.0.1"`` (and libtpu when installed): the compiler whose text
    is being read, from the installed packages' metadata (jax itself is not imported here)."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("jax", "jaxlib", "libtpu"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            continue
    return ", ".join(found) or "jax not installed"


def _unreadable(line: int, stmt: str, err: HloParseError) -> HloParseError:
    """An instruction this parser cannot read, said with its line and the compiler that
    printed it (a format a newer XLA prints must not become a wrong figure)."""
    reason = str(err).split(": ", 1)[-1].split(". Fix:")[0]
    return HloParseError(
        problem(
            f"parse_hlo_module, line {line}",
            f"cannot read {stmt[:100]!r} ({reason}); the text was printed by {compiler_versions()}",
            "this compiler prints HLO that shardviz does not read yet: report the line with "
            "these versions, or use jax 0.10.2 to 0.12.x, which shardviz is tested with",
        )
    )


def _blank_comments(text: str) -> str:
    """``/* ... */`` comments removed, their line breaks kept (so lines keep their numbers)."""
    return re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), text, flags=re.S)


def parse_hlo_module(text: str) -> HloModule:
    """Parse the text of an HLO module (as printed by XLA) into an :class:`HloModule`.

    One pass over the lines: outside a computation they are the header, the stack-frame
    tables (``FileNames`` ..., then one ``<id> <value>`` row a line up to the first line that
    is not one) and computation headers; inside, one instruction a line, or several lines
    joined while a bracket is open or a line ends with a comma.

    Raises:
        HloParseError: if the text has no ``HloModule`` header or an instruction cannot be read.
    """
    name = ""
    attrs: dict[str, str] = {}
    tables = _Tables()
    computations: list[HloComputation] = []
    current: HloComputation | None = None
    table: dict | None = None  # the table whose rows come next, if any
    read_value: Callable[[str], Any] = _name_value
    buffer = ""  # a statement written over several lines, so far
    depth = 0
    saw_header = False

    line = at = 0  # the line being read; the line where the statement being read starts
    for line, raw in enumerate(_blank_comments(text).splitlines(), 1):
        stripped = raw.strip()
        if not buffer:
            at = line
        if buffer:
            buffer += " " + stripped
            depth += _depth_change(stripped)
            if depth > 0 or stripped.endswith(","):
                continue
            stmt, buffer, depth = buffer, "", 0
        else:
            if not stripped:
                table = None
                continue
            if current is None:
                if stripped in _TABLES:
                    kind = _TABLES[stripped]
                    table, read_value = getattr(tables, kind), _TABLE_VALUES[kind]
                    continue
                if table is not None:
                    m = _TABLE_ROW_RE.match(stripped)
                    if m:
                        table[int(m.group(1))] = read_value(m.group(2).strip())
                        continue
                    table = None
                opened = _open_computation(stripped)
                if opened is not None:
                    current = opened
                    continue
            elif stripped == "}" or stripped.startswith("}, execution_thread="):
                # (A host computation closes with its thread: `}, execution_thread="host"`.)
                computations.append(current)
                current = None
                continue
            d = _depth_change(stripped)
            if d > 0 or (current is not None and stripped.endswith(",")):
                # An instruction written over several lines (hand-written HLO).
                buffer, depth = stripped, d
                continue
            stmt = stripped

        if stmt.startswith("HloModule"):
            saw_header = True
            name, header_attrs = _parse_header(stmt)
            attrs.update(header_attrs)  # (a second header adds to the first one's)
        elif current is not None:
            try:
                current.instructions.append(_parse_instruction(stmt, current.name))
            except HloParseError as err:
                raise _unreadable(at, stmt, err) from err
        # Anything else outside a computation (stray text) is ignored.

    if current is not None:
        computations.append(current)
    if not saw_header and not computations:
        raise HloParseError(
            problem(
                "parse_hlo_module",
                "the text holds no HloModule header and no computation",
                "pass compiled.as_text() or a dumped *.txt HLO module",
            )
        )
    return HloModule(name=name, attrs=attrs, computations=computations, tables=tables)
