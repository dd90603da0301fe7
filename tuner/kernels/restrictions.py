"""A space's restrictions as data: Python expressions over the parameter names, checked before they are evaluated.

Kernel Tuner's restrictions and the ``ConfigurationSpace.Conditions`` of T1 files (the Auto-Tuning Association's
input format) are Python expressions such as ``block_size_x * block_size_y <= 1024`` or ``use_padding == 0 or
block_size_x % 32 != 0``. A recording is data, so its text is never handed to ``eval``: it is parsed with
:mod:`ast` and accepted only when every node is one of

* a parameter's name, or a number or boolean constant;
* arithmetic: ``+ - * / // %``, unary ``- +``, and ``**`` with a whole constant exponent of at most
  :data:`MAX_EXPONENT` (so that no expression can make a number of unbounded size);
* a comparison ``== != < <= > >=``, chained as in Python (``32 <= a * b <= 1024``);
* ``and``, ``or``, ``not``.

Anything else (a call, an attribute, a subscript, a string, a name that is no parameter) is refused with a message
that names the expression and what it holds. An accepted expression is evaluated by walking its tree over numpy
arrays, one element per configuration, so a whole recording is checked at once. ``and``, ``or`` and ``not`` give
the truth of Python's (which returns an operand, not a boolean); integer division and remainder follow Python's
signs, and a division by zero makes the configuration break the restriction (where Python would raise).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tuner.errors import TunerError

MAX_EXPONENT = 64
MAX_TEXT = 2_000
"""Characters of one restriction; Python's parser and the checks that walk the tree nest a call per operator."""
MAX_DEPTH = 64
"""Operators nested in one restriction (``not not … a`` or ``a + a + … + a``)."""

_ARITHMETIC: dict[type[ast.operator], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_COMPARISON: dict[type[ast.cmpop], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
           ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<",
           ast.RShift: ">>", ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
           ast.Invert: "~"}


@dataclass(frozen=True)
class Restriction:
    """One checked expression: its text, as written, and its parsed tree."""

    text: str
    tree: ast.expr
    names: frozenset[str]
    """The parameters it reads."""

    def holds(self, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        """Per configuration (one element of each column), whether the restriction holds."""
        size = len(next(iter(columns.values()))) if columns else 1
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            value, broken = _evaluate(self.tree, columns)
            holds = _truth(value) & ~broken
        return np.broadcast_to(holds, (size,)).copy()


def parse_restriction(text: object, names: Sequence[str], where: str) -> Restriction:
    """The restriction ``text`` over the parameters ``names``; TunerError naming ``where`` (a file and field)
    when it is not an expression of the accepted kind."""
    if not isinstance(text, str):
        raise TunerError(f"{where} must be an expression in text, not {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise TunerError(f"{where}: '{text[:40]}…' has {len(text):,} characters, more than the {MAX_TEXT:,} a "
                         f"restriction may have; split it into several restrictions")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise TunerError(f"{where}: '{text}' is not a Python expression ({exc.msg})") from None
    except (RecursionError, MemoryError):
        tree = None
    if tree is None or _depth(tree) > MAX_DEPTH:
        raise TunerError(f"{where}: '{text[:40]}…' nests more than {MAX_DEPTH} operators; split it into several "
                         f"restrictions (each must hold)")
    read: set[str] = set()
    _check(tree, set(names), read, text, where)
    return Restriction(text, tree, frozenset(read))


def parse_restrictions(texts: object, names: Sequence[str], source: str, field: str) -> tuple[Restriction, ...]:
    """A list of restrictions, the ``field`` of the file ``source``."""
    if not isinstance(texts, list):
        raise TunerError(f"{source}: field '{field}' must list the restrictions, each a Python expression over the "
                         f"parameters")
    return tuple(parse_restriction(text, names, f"{source}: field '{field}[{i}]'") for i, text in enumerate(texts))


def satisfied(restrictions: Sequence[Restriction], columns: Mapping[str, np.ndarray]) -> np.ndarray:
    """Per configuration, whether it satisfies every restriction."""
    size = len(next(iter(columns.values()))) if columns else 0
    keep = np.ones(size, dtype=bool)
    for restriction in restrictions:
        keep &= restriction.holds(columns)
    return keep


def _depth(tree: ast.AST) -> int:
    """How deeply the tree's nodes nest, found without recursion."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _check(node: ast.AST, names: set[str], read: set[str], text: str, where: str) -> None:
    def refuse(what: str) -> TunerError:
        return TunerError(f"{where}: '{text}' holds {what}; a restriction may only combine the parameters "
                          f"({', '.join(sorted(names))}) and numbers with arithmetic (+ - * / // % and ** by a "
                          f"whole number up to {MAX_EXPONENT}), comparisons and and/or/not")

    if isinstance(node, ast.Name):
        if node.id not in names:
            raise refuse(f"the name '{node.id}', which is no parameter of the space")
        read.add(node.id)
    elif isinstance(node, ast.Constant):
        if not isinstance(node.value, int | float):  # bool is an int
            raise refuse(f"the constant {node.value!r}")
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _ARITHMETIC:
            raise refuse(f"the operator '{_SYMBOL.get(type(node.op), type(node.op).__name__)}'")
        if isinstance(node.op, ast.Pow) and not (isinstance(node.right, ast.Constant)
                                                 and type(node.right.value) is int
                                                 and 0 <= node.right.value <= MAX_EXPONENT):
            raise refuse("a power whose exponent is not a whole number from 0 to 64")
        _check(node.left, names, read, text, where)
        _check(node.right, names, read, text, where)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, ast.USub | ast.UAdd | ast.Not):
            raise refuse(f"the operator '{_SYMBOL.get(type(node.op), type(node.op).__name__)}'")
        _check(node.operand, names, read, text, where)
    elif isinstance(node, ast.Compare):
        for op in node.ops:
            if type(op) not in _COMPARISON:
                raise refuse(f"the comparison '{_SYMBOL.get(type(op), type(op).__name__)}'")
        for operand in (node.left, *node.comparators):
            _check(operand, names, read, text, where)
    elif isinstance(node, ast.BoolOp):
        for operand in node.values:
            _check(operand, names, read, text, where)
    else:
        raise refuse(f"{_describe(node)}")


def _describe(node: ast.AST) -> str:
    kinds = {ast.Call: "a call", ast.Attribute: "an attribute", ast.Subscript: "a subscript",
             ast.Lambda: "a lambda", ast.IfExp: "a conditional expression", ast.List: "a list",
             ast.Tuple: "a tuple", ast.Set: "a set", ast.Dict: "a dictionary", ast.JoinedStr: "a formatted string",
             ast.NamedExpr: "an assignment"}
    return next((label for kind, label in kinds.items() if isinstance(node, kind)),
                f"an expression of kind {type(node).__name__}")


Evaluated = tuple[np.ndarray, np.ndarray]
"""Per configuration, a value and whether computing it divided by zero (where Python would raise)."""


def _evaluate(node: ast.expr, columns: Mapping[str, np.ndarray]) -> Evaluated:
    none = np.asarray(False)
    if isinstance(node, ast.Name):
        return columns[node.id], none
    if isinstance(node, ast.Constant):
        return np.asarray(node.value), none
    if isinstance(node, ast.BinOp):
        (left, broken_left), (right, broken_right) = _evaluate(node.left, columns), _evaluate(node.right, columns)
        broken = broken_left | broken_right
        if isinstance(node.op, ast.FloorDiv | ast.Mod | ast.Div):
            zero = np.asarray(right) == 0
            return _ARITHMETIC[type(node.op)](left, np.where(zero, 1, right)), broken | zero
        return _ARITHMETIC[type(node.op)](left, right), broken
    if isinstance(node, ast.UnaryOp):
        operand, broken = _evaluate(node.operand, columns)
        if isinstance(node.op, ast.Not):
            return ~_truth(operand), broken
        return (-operand if isinstance(node.op, ast.USub) else +operand), broken
    if isinstance(node, ast.Compare):
        result, broken = np.asarray(True), none
        left, broken_left = _evaluate(node.left, columns)
        broken = broken | broken_left
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right, broken_right = _evaluate(comparator, columns)
            broken = broken | (broken_right & result)  # a chain stops at its first false link
            result = result & _COMPARISON[type(op)](left, right)
            left = right
        return result, broken
    if isinstance(node, ast.BoolOp):
        # Python stops at the first operand that decides: a later operand's division by zero counts only where
        # none before it decided
        deciding = isinstance(node.op, ast.Or)  # the truth that decides: True for or, False for and
        decided, broken = np.asarray(False), none
        for value in node.values:
            truth_value, broken_value = _evaluate(value, columns)
            broken = broken | (broken_value & ~decided)
            decided = decided | (_truth(truth_value) == deciding)
        return (decided if deciding else ~decided), broken
    raise AssertionError(f"unchecked node {type(node).__name__}")  # _check refuses every other kind


def _truth(value: np.ndarray) -> np.ndarray:
    value = np.asarray(value)
    truth: np.ndarray = value != 0
    if np.issubdtype(value.dtype, np.floating):
        truth = truth & ~np.isnan(value)
    return truth
