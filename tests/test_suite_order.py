"""conftest's order of the long files names files that exist: a file moved without its entry there loses its place
silently (the Hugging Face export's test did, when checkpoints/ split) and may start last, alone on one worker."""

from tests.conftest import _LONGEST_FIRST, REPO_ROOT


def test_the_longest_first_files_exist():
    missing = [name for name in _LONGEST_FIRST if not (REPO_ROOT / "tests" / name).is_file()]
    assert not missing, f"tests/conftest.py's _LONGEST_FIRST names files that do not exist: {missing}"
    assert len(set(_LONGEST_FIRST)) == len(_LONGEST_FIRST)
