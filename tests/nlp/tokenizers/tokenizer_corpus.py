"""Real and adversarial text for the tokenizer parity tests, computed once per test process (lru_cache).

Both `test_tokenization.py` and `test_text_layers.py` use these, so the expensive parts (the pure-Python tokenizer
over ~9 MB of distinct lines, with two vocabularies) run once however many tests need them.
"""

import functools
import json
import pathlib
import random
import unicodedata

from official.nlp.tokenizers import char_rules, tokenization

# Column names that hold text in the GLUE TSV files (and the original MRPC files).
_TEXT_COLUMNS = {"sentence", "sentence1", "sentence2", "question", "#1 String", "#2 String"}


def _lines(path: pathlib.Path, encoding: str = "utf-8") -> list[str]:
    # Split at "\n" only: str.splitlines() would also split at U+2028, U+0085, U+001C, ... inside the text.
    text = path.read_text(encoding=encoding)
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def glue_texts(glue_dir: pathlib.Path) -> list[str]:
    """Every text cell of every GLUE TSV file (and MRPC's original .txt files), in file order."""
    texts = []
    paths = sorted(glue_dir.glob("*/*.tsv")) + sorted(glue_dir.glob("MRPC/msr_paraphrase_*.txt"))
    for path in paths:
        if path.name == "dev_ids.tsv":
            continue
        lines = [line for line in _lines(path, encoding="utf-8-sig") if line]  # MRPC files start with a BOM
        if path.parent.name == "CoLA":  # no header: source, label, original mark, sentence
            columns = [3]
        else:
            header = lines.pop(0).split("\t")
            columns = [i for i, name in enumerate(header) if name in _TEXT_COLUMNS]
            assert columns, f"{path}: no text column in header {header}"
        for line in lines:
            cells = line.split("\t")
            texts.extend(cells[i] for i in columns if i < len(cells) and cells[i])
    return texts


@functools.cache
def real_lines(shared_data: pathlib.Path) -> tuple[str, ...]:
    """Distinct non-empty lines of the SQuAD dev contexts and the GLUE text columns (first-seen order)."""
    squad = [line for line in _lines(shared_data / "pretraining_golden" / "squad_contexts.txt") if line.strip()]
    assert len(squad) == 10_667, len(squad)
    texts = squad + glue_texts(shared_data / "glue")
    return tuple(dict.fromkeys(texts))


@functools.cache
def golden(shared_data: pathlib.Path) -> tuple[tuple[str, ...], dict[str, list[dict]]]:
    """The 360 golden strings and the original code's outputs for both vocabularies."""
    folder = shared_data / "tokenizer_golden"
    strings = tuple(
        line.encode("ascii").decode("unicode_escape")
        for line in (folder / "strings.escaped.txt").read_text(encoding="ascii").split("\n")[:-1]
    )
    outputs = {
        case: [json.loads(line) for line in (folder / f"{case}.jsonl").read_text().splitlines()]
        for case in ("uncased", "cased")
    }
    assert all(len(v) == len(strings) == 360 for v in outputs.values())
    return strings, outputs


@functools.cache
def full_tokenizer(vocab_file: pathlib.Path, do_lower_case: bool) -> tokenization.FullTokenizer:
    return tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)


@functools.cache
def python_ids(vocab_file: pathlib.Path, do_lower_case: bool, texts: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
    tok = full_tokenizer(vocab_file, do_lower_case)
    return tuple(tuple(tok.convert_tokens_to_ids(tok.tokenize(t))) for t in texts)


# ----------------------------------------------------------------------------------------------------------------
# Adversarial strings: one or more per exactness class, plus random code points from many blocks.

HAND_PICKED = [
    # Compatibility characters (NFKC would change them; the original keeps them).
    "½ ¼ ¾ ⅞ ² ³ ¹ ⁴ ₂ ℃ ™ № ℡ Ⅻ ⅻ ① ⒜ ㈱ ㍻ ﬁ ﬂ ﬀ ﬃ ﬄ ﬅ ﬆ ſ µ ʰ ª º",
    "ＦＵＬＬ ｗｉｄｔｈ １２３ ｶﾀｶﾅ ﾊﾝｶｸ ″ ‴ ⁗ … ‥ ≠ ≮ ⁄ ∕ ︰ ﹏ ﹐ ＂ ＇",
    # Case folding vs str.lower.
    "Straße STRASSE ẞ ß İstanbul İ ı Ǆ ǅ ǆ Ǉ ǈ ǉ Ǳ ǲ ǳ ŉ ǰ ΐ ΰ և ẖ ẗ ẘ ẙ ẚ ᾀ ᾈ ᾼ ῌ ῼ",
    "Ω Ω K K Å Å ϴ Θ ϐ ϑ ϕ ϖ ϰ ϱ ϵ ẛ ﬓ Ꭰ ꭰ Ⰰ ⰰ Ꙁ ꙁ 𐐀 𐐨 𞤀 𞤢 ᲐᲑᲒ ⓐ Ⓐ 𝐀 𝔄",
    # Greek final sigma in every context str.lower looks at.
    "ΟΔΟΣ ΟΔΟΣ. ΟΔΟΣ.Α ΣΑ Σ ΑΣ' Α'Σ ΑΣ\u0301 Α\u0301Σ ΑΣΣ ΑΣ1 1Σ ΑΣ-Β ΑΣ\u00adΒ ΑΣ\u200bΒ ΑΣ\u200b ΣΣΣ ᾼΣ ʰΣ ΑʰΣ",
    "ΑΣ中 中Σ ΑΣ\u3000Β ΑΣ\u2028Β ΑΣ\x00Β ΑΣ\ufffdΒ ΑΣ\x85Β ΑΣ\u2029 ΑΣ\u0345 ΑΣ𝐀 ΑΣⒶ ΑΣꭰ",
    # Control and format characters (dropped) and whitespace variants (separators or dropped).
    "a\u200bb a\u200cb a\u200db a\u2060b a\ufeffb a\u00adb a\u061cb a\u180eb a\u2066b\u2069 a\U000e0041b a\u206fb",
    "a\x00b a\x01b a\x7fb a\x85b a\x9fb a\x0bb a\x0cb a\x1cb a\x1db a\x1eb a\x1fb a\ufffdb a\ufffeb a\U0010fffdb",
    "a\tb a\nb a\rb a\u00a0b a\u1680b a\u2000b a\u2007b a\u200ab a\u202fb a\u205fb a\u3000b a\u2028b a\u2029b",
    # CJK: the original's ranges, neighbours outside them, compatibility ideographs, later extensions.
    "中文字 㐀䶿 一鿿 豈舘 﨎﨏 𠀀𪛟 𪜀𫜿 𫝀𫠟 𫠠𬺯 丽𪘀 𬺰𮯠 𰀀𱍊 ⺀⻳ ⼀⿕ 々〆〇 ぁア가힣 ㄱ ꀀ",
    "abc中def 中。中、「中」 ㊥ 🈚 〜 ～",
    # Punctuation (Unicode P*) and ASCII symbols vs other symbols.
    "$5 ^x `y` |z| ~w #h @m +1 =2 <a> ¡hola! ¿qué? «a» ‹b› „c“ ‘d’ 「e」 ﹁f﹂ ⸘g‽ ※h ‐i‑j‒k–l—m―n ·o· ᐀p ᠆q",
    "§1 ¶2 †3 ‡4 •5 ‣6 ‰7 ′8 ⁂9 ⁊10 ⸮11 ⹀12 ⹂13 ℅14 ©15 ®16 °17 ±18 ×19 ÷20 ¬21 ¦22 ¨23 ¯24 ´25 ¸26",
    # Accents and combining marks (NFD + Mn removal), including marks after non-letters and enclosing marks.
    "café résumé naïve Ångström Ñandú Čeština Ελληνικά ἀλήθεια Tiếng Việt e\u0301 e\u0301\u0327 \u0301a 1\u0301",
    "a\u20dd b\u20de c\u0488 ़ क़ ড় ঢ় য় ਖ਼ ୟ ཱི ཱུ ྲྀ ླྀ 가각갂 Ḁ ḁ ẞ ǅ ﬀ\u0301 ᄀ\u1161\u11a8",
    # Musical/other combining characters with a non-zero combining class (canonical reordering survives Mn removal).
    "𝅘𝅥𝅮 𝅗𝅥 \U0001d165\U0001d16d \U0001d16d\U0001d165 a\U0001d16d\u0301\U0001d165 ᄀ〮 ᄀ〯 〮〯",
    # Emoji, symbols, surrogate-plane and private-use characters, unassigned code points.
    "smile 😃 👋🏿 👨‍👩‍👧 🇺🇸 ❤️ ☺︎ 1️⃣ \ue000 \U000f0000 \u0378 \U0001fb00 \U00030000 \U0003134a",
    # Scripts without spaces or with special rules.
    "ไทย ภาษา العَرَبِيَّة עִבְרִית नमस्ते দেবনাগরী தமிழ் ಕನ್ನಡ ພາສາລາວ ᠮᠣᠩᠭᠣᠯ ꦗꦮ ᚠᚢᚦ ⴰⵣⴰ",
    # Special-token strings as plain text, '#' handling, URLs and numbers.
    "[CLS] [SEP] [MASK] [UNK] [PAD] [mask] [unused0] a[MASK]b ##ab ## # ###",
    "x@y.org https://a.b/c?d=e&f=g 2.5e-3 -7 1,000,000 3½ F# C++ can't isn't",
    # Words around the 100 (transformers) and 200 (original) character limits; multi-byte characters count once.
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101 + " " + "d" * 150,
    "e" * 199 + " " + "f" * 200 + " " + "g" * 201 + " " + "é" * 150 + " " + "é" * 201 + " " + "中" * 250,
    "ÄÖÜ" * 67 + " " + "ǅ" * 120 + " " + "ŉ" * 150 + " " + "İ" * 101 + " " + "s\u0301" * 100 + " " + "ﬁ" * 120,
    "x\u200b" * 210 + " " + "y\u0301" * 199 + " " + "😃" * 201,
    # Empty and whitespace-only.
    "",
    "   ",
    "\u200b\u200b",
    "\u3000\u2028\t\n",
]

# Blocks the random strings draw from (start, end inclusive).
_BLOCKS = [
    (0x20, 0x7E),
    (0x80, 0x24F),
    (0x250, 0x36F),
    (0x370, 0x52F),
    (0x530, 0x58F),
    (0x590, 0x6FF),
    (0x900, 0xDFF),
    (0xE00, 0xEFF),
    (0xF00, 0xFFF),
    (0x10A0, 0x10FF),
    (0x1100, 0x11FF),
    (0x1680, 0x169F),
    (0x1800, 0x18AF),
    (0x1AB0, 0x1AFF),
    (0x1C80, 0x1CBF),
    (0x1D00, 0x1DFF),
    (0x1E00, 0x1FFF),
    (0x2000, 0x206F),
    (0x2070, 0x214F),
    (0x2150, 0x218F),
    (0x2190, 0x23FF),
    (0x2400, 0x24FF),
    (0x2500, 0x27FF),
    (0x2C00, 0x2C7F),
    (0x2C80, 0x2DFF),
    (0x2E00, 0x2E7F),
    (0x2E80, 0x2FDF),
    (0x3000, 0x30FF),
    (0x3100, 0x33FF),
    (0x3400, 0x4DBF),
    (0x4DC0, 0x4DFF),
    (0x4E00, 0x9FFF),
    (0xA000, 0xA4CF),
    (0xA640, 0xA6FF),
    (0xA700, 0xA7FF),
    (0xA800, 0xABFF),
    (0xAC00, 0xD7FF),
    (0xE000, 0xE0FF),
    (0xF900, 0xFAFF),
    (0xFB00, 0xFDFF),
    (0xFE00, 0xFE6F),
    (0xFE70, 0xFFFF),
    (0x10000, 0x1007F),
    (0x10400, 0x104FF),
    (0x1D100, 0x1D1FF),
    (0x1D400, 0x1D7FF),
    (0x1E900, 0x1E95F),
    (0x1F000, 0x1FAFF),
    (0x20000, 0x2FA1F),
    (0x30000, 0x3134F),
    (0xE0000, 0xE01EF),
    (0xF0000, 0xF00FF),
]


def adversarial_strings(n_random: int = 400, seed: int = 0) -> list[str]:
    """HAND_PICKED plus `n_random` strings of random code points (with spaces) from many Unicode blocks."""
    rng = random.Random(seed)
    out = list(HAND_PICKED)
    for _ in range(n_random):
        chars = []
        for _ in range(rng.randint(1, 40)):
            if rng.random() < 0.2:
                chars.append(" ")
                continue
            lo, hi = rng.choice(_BLOCKS)
            cp = rng.randint(lo, hi)
            if 0xD800 <= cp <= 0xDFFF:
                continue
            chars.append(chr(cp))
        out.append("".join(chars))
    return out


def uncased_normalize(text: str) -> str:
    """Lower-case, NFD, drop Mn: what the uncased tokenizer does to a word."""
    text = unicodedata.normalize("NFD", text.lower())
    return "".join(c for c in text if unicodedata.category(c) != "Mn")


def clean(text: str) -> str:
    """Drop the characters the tokenizer drops (controls, formats, NUL, U+FFFD)."""
    return text.translate(char_rules.CLEAN_TABLE).strip()
