"""Masked-language-modelling text that ships with every Python, split by document into roles.

Documents (``source="pydoc"``, the default): every topic of :mod:`pydoc_data.topics` (the help texts
of the language reference) and the module docstring of every top-level standard-library file (read
with :mod:`ast`, nothing is imported). ``source="stdlib"`` (**Choice**, a larger pool of documents):
the same topics, and one document per standard-library module at any depth (packages included;
``test``/``tests``, ``idlelib``, ``turtledemo``, ``lib2to3`` and ``site-packages`` left out): the
module's docstring followed by every class and function docstring in it, in :func:`ast.walk` order;
a module is named by its dotted path (``module:email.mime.text``), so a top-level module keeps its
``pydoc`` name and its role. Whitespace is normalised and exact duplicates are dropped (the first kept, in
sorted order). Each *document* goes to one role by a hash of its name (**Choice**: 40% the
reference sample that trains the MLM head, 15% each signal, probe, S and T), so no document is
is in two roles and the i.i.d. unit is the sequence of one document's role. With a ``split_seed``
the documents outside the reference sample are dealt anew to signal, probe, ``S`` and ``T`` by a
hash of ``(split_seed, name)`` (the same shares, still disjoint by document): every split seed draws
which documents go to which of these roles. The reference sample stays the same documents
(**Choice**: they train the head of ``f_old``, the network under study, which every seed shares;
none of them is in another role under any split seed).

Sequences: a document's word-piece ids (no special tokens) cut into consecutive windows of
``seq_len - 2`` ids, each wrapped in ``[CLS] ... [SEP]`` (a shorter last window is dropped).
Mask (**Choice**, fixed per sequence): ``n_mask`` distinct positions among the ``seq_len - 2``
inner ones, drawn by a generator seeded from ``(mask_seed, role, sequence index)``; each is
replaced by ``[MASK]`` (always: no 80/10/10 rule, so the model can find the masked positions
from its input alone) and its original id is the target. A sample is ``(x, y)``: ``x`` the
``(seq_len,)`` masked ids, ``y`` the ``(n_mask,)`` targets in position order; its loss is a
function of the sample alone.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import torch

from numerics.seeding import derived_seed

__all__ = ["ROLE_SHARES", "SOURCES", "MaskedCorpus", "documents", "role_of"]

#: **Choice**: the share of the documents each role gets (by a hash of the document's name).
ROLE_SHARES = {"reference_sample": 0.40, "signal": 0.15, "probe": 0.15, "S": 0.15, "T": 0.15}
#: the document pools :func:`documents` offers (the module docstring says what each holds).
SOURCES = ("pydoc", "stdlib")
#: folders of the standard library that ``source="stdlib"`` leaves out (tests, demos, an IDE, installed packages).
_SKIP = frozenset({"test", "tests", "idlelib", "turtledemo", "lib2to3", "site-packages", "dist-packages", "__pycache__"})


def _normalise(text: str) -> str:
    return " ".join(text.split())


def documents(source: str = "pydoc") -> dict[str, str]:
    """``name -> text``: pydoc topics (``topic:NAME``) and stdlib module docstrings (``module:NAME``), deduplicated;
    ``source`` one of :data:`SOURCES` (the module docstring says what each holds)."""
    if source not in SOURCES:
        raise ValueError(f"source == {source!r}, must be one of {', '.join(SOURCES)}.")
    return dict(_documents(source))


def _module_texts(source: str):
    """``(name, text)`` of the standard library's modules: top-level files' docstrings (``pydoc``), or every module's
    docstrings joined (``stdlib``)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    paths = sorted(root.glob("*.py")) if source == "pydoc" else sorted(
        p for p in root.rglob("*.py") if not _SKIP.intersection(p.relative_to(root).parts[:-1]))
    for path in paths:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        if source == "pydoc":
            doc = ast.get_docstring(tree)
        else:
            kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
            doc = " ".join(d for d in (ast.get_docstring(t) for t in ast.walk(tree) if isinstance(t, kinds)) if d)
        parts = path.relative_to(root).with_suffix("").parts
        if doc:
            yield "module:" + ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts), doc


@functools.lru_cache(maxsize=2)
def _documents(source: str = "pydoc") -> tuple:
    import pydoc_data.topics as topics

    raw = [(f"topic:{k}", v) for k, v in sorted(topics.topics.items())] + list(_module_texts(source))
    out, seen = {}, set()
    for name, text in raw:
        text = _normalise(text)
        if text and text not in seen and name not in out:
            seen.add(text)
            out[name] = text
    return tuple(out.items())


def _deal(key: str, shares: dict) -> str:
    u = int(hashlib.sha1(key.encode()).hexdigest(), 16) % 10_000 / 10_000 * sum(shares.values())
    acc = 0.0
    for role, share in shares.items():
        acc += share
        if u < acc:
            return role
    return role   # rounding: the last role


def role_of(name: str, split_seed: int | None = None) -> str:
    """The role of a document: a hash of its name into :data:`ROLE_SHARES`' cumulative shares. With a
    ``split_seed``, a document outside the reference sample is dealt again, by a hash of ``split_seed`` and
    its name, among the other roles (their shares renormalised)."""
    role = _deal(name, ROLE_SHARES)
    if split_seed is None or role == "reference_sample":
        return role
    return _deal(f"split {int(split_seed)}:{name}", {r: v for r, v in ROLE_SHARES.items() if r != "reference_sample"})


@dataclass(frozen=True)
class MaskedCorpus:
    """Every role's masked sequences: ``x[role]`` ``(n, seq_len)`` ids, ``y[role]`` ``(n, n_mask)`` targets;
    ``doc_of[role]`` ``(n,)``: the index in ``docs[role]`` of the document each sequence was cut from."""

    x: dict
    y: dict
    docs: dict          # role -> names of its documents
    seq_len: int
    n_mask: int
    mask_seed: int
    mask_id: int
    split_seed: int | None = None
    doc_of: dict | None = None
    source: str = "pydoc"

    @classmethod
    def build(cls, tokenizer, seq_len: int = 64, n_mask: int = 9, mask_seed: int = 0,
              split_seed: int | None = None, source: str = "pydoc") -> "MaskedCorpus":
        """Tokenise, cut and mask every role's documents (module docstring); ``split_seed`` draws which
        documents go to which role (:func:`role_of`); ``source``: the pool of documents (:func:`documents`)."""
        if not (8 <= seq_len <= 512 and 1 <= n_mask <= seq_len - 2):
            raise ValueError(f"seq_len == {seq_len}, n_mask == {n_mask}: need 8 <= seq_len <= 512, 1 <= n_mask <= seq_len - 2.")
        windows = {role: [] for role in ROLE_SHARES}
        docs = {role: [] for role in ROLE_SHARES}
        owner = {role: [] for role in ROLE_SHARES}
        w = seq_len - 2
        special = {tokenizer.mask_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id}
        for name, text in documents(source).items():
            ids = [i if i not in special else tokenizer.unk_token_id
                   for i in tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]]
            role = role_of(name, split_seed)
            docs[role].append(name)
            cut = [ids[k:k + w] for k in range(0, len(ids) - w + 1, w)]
            windows[role] += cut
            owner[role] += [len(docs[role]) - 1] * len(cut)
        xs, ys = {}, {}
        for r_index, role in enumerate(ROLE_SHARES):
            inner = torch.tensor(windows[role], dtype=torch.long).reshape(-1, w)
            xs[role], ys[role] = _mask(inner, tokenizer, n_mask, mask_seed, r_index)
        return cls(xs, ys, docs, seq_len, n_mask, mask_seed, tokenizer.mask_token_id, split_seed,
                   {role: torch.tensor(owner[role], dtype=torch.long) for role in ROLE_SHARES}, source)

    def sample(self, role: str, n: int | None = None, seed: int | None = None):
        """``(x, y)`` of ``role``: all of it, or ``n`` sequences in an order drawn from ``seed``."""
        x, y = self.x[role], self.y[role]
        if n is None:
            return x, y
        if n > x.shape[0]:
            raise ValueError(f"n == {n}, must be <= the {x.shape[0]} sequences of role {role!r}.")
        g = torch.Generator().manual_seed(int(seed or 0))
        idx = torch.randperm(x.shape[0], generator=g)[:n]
        return x[idx], y[idx]


def _mask(inner: torch.Tensor, tokenizer, n_mask: int, mask_seed: int, role_index: int):
    """``(x, y)``: the ``n_mask`` smallest of ``w`` uniforms per sequence (row ``i`` of one seeded draw of
    ``(n, w)`` uniforms, so sequence ``i``'s mask depends on ``(mask_seed, role, i)`` alone), sorted."""
    n, w = inner.shape
    g = torch.Generator().manual_seed(derived_seed(int(mask_seed), "pretrained/mask", role_index))
    pos = torch.rand(n, w, generator=g).argsort(1)[:, :n_mask].sort(1).values
    y = inner.gather(1, pos)
    x = inner.clone()
    x.scatter_(1, pos, tokenizer.mask_token_id)
    cls = torch.full((n, 1), tokenizer.cls_token_id, dtype=torch.long)
    sep = torch.full((n, 1), tokenizer.sep_token_id, dtype=torch.long)
    return torch.cat([cls, x, sep], 1), y
