"""One output-folder rule for every script (issue 40): a job writes into a folder that is new, empty, or its own
earlier run (proven by a marker it wrote itself), never the working folder, a folder that is or holds one of its
inputs, a link to such a folder, or a folder of someone else's files, and never a folder that another job is
writing. Each refusal is one line and exit status 2 at start-up, before any work, and every file of the scene is
still there byte for byte, with nothing added.

Every script that writes an output folder runs against the same cases, all in one process
(`every_script.py --cases`: TensorFlow is imported once). The scripts whose output is a file (prepare_corpus,
create_pretraining_data) run against the same inputs reached through links. The two destructive cases of the issue
are here too: prepare_corpus deleted its input when the input was a link to the output, and deleted its earlier
output before finding a damaged input.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil

import pytest

from official.nlp.common import claims, output_folders
from tests import pretraining_records
from tests.conftest import REPO_ROOT
from tests.run_scripts.script_runs import CONFIG, assert_user_error, run_in_one_process, run_script

# script, its output flag, the input folder (under IN) that the "input" cases name as the output, its flags
# ({IN}: the folder of inputs, {OUT}: the output folder of the case, {GLUE}: the shared GLUE data).
TRAINING = ["--max_seq_length=32", "--train_batch_size=4"]
SCRIPTS = {
    "convert_checkpoint": ("--output_dir", "model", ["--input={IN}/model", "--output_dir={OUT}"]),
    "export_model": (
        "--export_dir",
        "model",
        ["--task=encoder", "--init_checkpoint={IN}/model", "--export_dir={OUT}", "--max_seq_length=32"],
    ),
    "run_pretraining": (
        "--model_dir",
        "records",
        [
            "--input_file={IN}/records/*",
            "--model_dir={OUT}",
            "--bert_config_file={IN}/bert_config.json",
            "--max_predictions_per_seq=5",
            "--num_train_steps=1",
            "--num_warmup_steps=0",
            *TRAINING,
        ],
    ),  # fmt: skip
    "run_pretraining --export_dir": (
        "--export_dir",
        "records",
        [
            "--input_file={IN}/records/*",
            "--model_dir={WORK}/run",
            "--export_dir={OUT}",
            "--bert_config_file={IN}/bert_config.json",
            "--max_predictions_per_seq=5",
            "--num_train_steps=1",
            "--num_warmup_steps=0",
            *TRAINING,
        ],
    ),  # fmt: skip
    "run_classifier": (
        "--output_dir",
        "mrpc",
        [
            "--task_name=MRPC",
            "--data_dir={IN}/mrpc",
            "--init_checkpoint={IN}/model",
            "--output_dir={OUT}",
            "--do_train",
            "--do_eval",
            *TRAINING,
        ],
    ),  # fmt: skip
    "run_ner": (
        "--output_dir",
        "ner",
        [
            "--train_file={IN}/ner/train.txt",
            "--init_checkpoint={IN}/model",
            "--output_dir={OUT}",
            "--do_train",
            *TRAINING,
        ],
    ),  # fmt: skip
    "run_squad": (
        "--output_dir",
        "squad",
        [
            "--train_file={IN}/squad/train.json",
            "--init_checkpoint={IN}/model",
            "--output_dir={OUT}",
            "--do_train",
            "--max_query_length=8",
            "--doc_stride=16",
            *TRAINING,
        ],
    ),  # fmt: skip
    "run_swag": (
        "--output_dir",
        "swag",
        [
            "--train_file={IN}/swag/train.jsonl",
            "--init_checkpoint={IN}/model",
            "--output_dir={OUT}",
            "--do_train",
            *TRAINING,
        ],
    ),  # fmt: skip
    "reproduce_paper": (
        "--output_dir",
        "corpus",
        [
            "--input_file={IN}/corpus/corpus.txt",
            "--output_dir={OUT}",
            "--budget=smoke",
            "--tasks=mrpc",
            "--tables=5",
            "--glue_dir={GLUE}",
            "--noplots",
        ],
    ),  # fmt: skip
}
# The jobs that write and resume one folder (`output_folders.run_folder`): a second job is refused while one runs.
RUN_FOLDERS = ("run_pretraining", "run_classifier", "run_ner", "run_squad", "run_swag", "reproduce_paper")
CASES = ("working folder", "foreign folder", "input folder", "link to an input folder", "claimed by another job")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, shared_data) -> pathlib.Path:
    """One folder of every script's inputs: a model directory, records, a corpus, slices of MRPC, CoNLL-2003,
    SQuAD and SWAG. Each case gets a copy, which it checks byte for byte."""
    import keras

    from official.nlp.checkpoints import model_dir
    from official.nlp.modeling.configs import BertConfig
    from official.nlp.modeling.encoder import BertEncoder

    root = tmp_path_factory.mktemp("inputs")
    vocab = pretraining_records.write_vocab(root / "vocab.txt")
    (root / "bert_config.json").write_text(json.dumps(CONFIG))
    keras.utils.set_random_seed(0)
    model_dir.save_model_dir(
        str(root / "model"), BertEncoder.from_bert_config(BertConfig(**CONFIG)), vocab_file=vocab, do_lower_case=True
    )
    pretraining_records.write_records(root / "records", num_files=1, per_file=8)
    (root / "corpus").mkdir()
    (root / "corpus" / "corpus.txt").write_text("One sentence here. Another one.\n\nA second document.\n")
    (root / "mrpc").mkdir()
    for name in ("train.tsv", "dev.tsv"):
        lines = (shared_data / "glue" / "MRPC" / name).read_text(encoding="utf-8").splitlines(keepends=True)
        (root / "mrpc" / name).write_text("".join(lines[:9]), encoding="utf-8")
    (root / "ner").mkdir()
    text = (shared_data / "conll2003" / "iob2" / "train.txt").read_text(encoding="utf-8")
    (root / "ner" / "train.txt").write_text(text[:2000].rsplit("\n\n", 1)[0] + "\n", encoding="utf-8")
    (root / "squad").mkdir()
    squad = json.loads((shared_data / "squad" / "dev-v1.1.json").read_text(encoding="utf-8"))
    squad["data"] = squad["data"][:1]
    (root / "squad" / "train.json").write_text(json.dumps(squad), encoding="utf-8")
    (root / "swag").mkdir()
    lines = (shared_data / "swag" / "hf_transformers_sample.jsonl").read_text(encoding="utf-8").splitlines()
    (root / "swag" / "train.jsonl").write_text("\n".join(lines[:8]) + "\n", encoding="utf-8")
    return root


def snapshot(folder: pathlib.Path) -> dict[str, str]:
    """{path under `folder`: SHA-256 of a file, or where a link points}: what must be the same after a refusal."""
    found = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            found[name] = "-> " + os.readlink(path)
        elif path.is_file():
            found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[name] = "folder"
    return found


def user_files(folder: pathlib.Path) -> None:
    """A user's files: notes, a results page, and a vocabulary in data/ (what reproduce_paper replaced)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.txt").write_text("my notes\n")
    (folder / "results.md").write_text("# my results\n")
    (folder / "eval_results.txt").write_text("accuracy = 0.91\n")
    (folder / "data").mkdir()
    (folder / "data" / "vocab.txt").write_text("[PAD]\nmine\n")


def scene(root: pathlib.Path, inputs: pathlib.Path, script: str, case: str) -> tuple[pathlib.Path, str]:
    """Builds the scene of `case` for `script` under `root` (the working folder, with a user's files and a copy of
    the inputs in IN/); returns the working folder and the output path the case names."""
    _, input_folder, _ = SCRIPTS[script]
    work = root / script.replace(" --", "-") / case.replace(" ", "_")
    user_files(work)
    shutil.copytree(inputs, work / "IN", symlinks=True)
    if case == "working folder":
        return work, "."
    if case == "foreign folder":
        user_files(work / "theirs")
        return work, str(work / "theirs")
    if case == "input folder":
        return work, str(work / "IN" / input_folder)
    if case == "link to an input folder":
        (work / "link").symlink_to(work / "IN" / input_folder, target_is_directory=True)
        return work, str(work / "link")
    assert case == "claimed by another job"
    out = work / "out"
    parent, name = output_folders.split(str(out))
    # A live job of this host (the test's own process) holds the claim, as a job started a moment earlier would.
    claim = f".{name}.{os.getpid()}-0123abcd-{claims.host()}.claim"
    (pathlib.Path(parent) / claim).write_text(json.dumps({"host": "here", "pid": os.getpid(), "since": "now"}))
    return work, str(out)


@pytest.fixture(scope="module")
def refusals(inputs, tmp_path_factory, shared_data) -> dict[tuple[str, str], tuple]:
    """{(script, case): (result, working folder, output, snapshot before)} for every script and case, all run in
    one process."""
    root = tmp_path_factory.mktemp("scenes")
    runs = {}
    for script in SCRIPTS:
        for case in CASES:
            if case == "claimed by another job" and script not in RUN_FOLDERS:
                continue
            work, out = scene(root, inputs, script, case)
            flag_name, _, flags = SCRIPTS[script]
            args = [f.format(IN=work / "IN", OUT=out, WORK=work, GLUE=shared_data / "glue") for f in flags]
            runs[(script, case)] = (work, out, snapshot(work), args)
    results = run_in_one_process(
        {key: (key[0].split(" ")[0] + ".py", args, work) for key, (work, _, _, args) in runs.items()}
    )
    return {key: (results[key], *runs[key][:3]) for key in runs}


def test_every_script_that_writes_a_folder_is_checked(refusals):
    writers = {"convert_checkpoint", "export_model", "run_pretraining", "reproduce_paper"}
    writers |= {p.stem for p in (REPO_ROOT / "run_scripts").glob("run_*.py")}
    assert writers <= {script.split(" ")[0] for script, _ in refusals}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("script", SCRIPTS)
def test_a_folder_that_is_not_the_jobs_own_is_refused_at_start_up_and_kept(refusals, script, case):
    if (script, case) not in refusals:
        pytest.skip(f"{script} adds a numbered version or a new folder: a claimed name is not refused")
    result, work, out, before = refusals[(script, case)]
    flag = SCRIPTS[script][0]
    fragments = {
        "working folder": ["is the working folder"],
        "foreign folder": [],
        "input folder": ["writing the output there would replace it"],
        "link to an input folder": ["writing the output there would replace it"],
        "claimed by another job": ["is being written by another job"],
    }[case]
    assert_user_error(result, f"{flag}={out}", *fragments)
    assert snapshot(work) == before  # byte for byte, and nothing added


# ---- scripts whose output is a file -----------------------------------------------------------------------------

FILE_SCRIPTS = {
    "prepare_corpus.py": ["--input_file={input}", "--output_file={output}"],
    "build_vocab.py": ["--input_file={input}", "--output_file={output}", "--vocab_size=50", "--min_count=1"],
    "extract_features.py": [
        "--input_file={input}",
        "--output_file={output}",
        "--init_checkpoint={tmp}/no_model",
        "--layers=-1",
        "--max_seq_length=16",
    ],
    "create_pretraining_data.py": [
        "--input_file={input}",
        "--output_file={output}",
        "--vocab_file={vocab}",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
    ],
}


def _file_scene(tmp_path: pathlib.Path, case: str) -> tuple[str, str]:
    """The corpus and the output file of `case` (`tmp_path/d2/real.txt` is the user's file)."""
    (tmp_path / "d2").mkdir()
    real = tmp_path / "d2" / "real.txt"
    real.write_text("The user's only copy. Of a corpus.\n\nA second document here.\n")
    if case == "the input":
        return str(real), str(real)
    if case == "a link to the output":  # issue 40: prepare_corpus deleted real.txt
        (tmp_path / "d2" / "link.txt").symlink_to("real.txt")
        return str(tmp_path / "d2" / "link.txt"), str(real)
    if case == "the output through a linked folder":
        (tmp_path / "dlink").symlink_to(tmp_path / "d2", target_is_directory=True)
        return str(tmp_path / "dlink" / "real.txt"), str(real)
    assert case == "an output that is a link to the input"
    (tmp_path / "d2" / "out.txt").symlink_to("real.txt")
    return str(real), str(tmp_path / "d2" / "out.txt")


FILE_CASES = (
    "the input",
    "a link to the output",
    "the output through a linked folder",
    "an output that is a link to the input",
)


@pytest.fixture(scope="module")
def file_refusals(tmp_path_factory) -> dict[tuple[str, str], tuple]:
    """{(script, case): (result, scene folder, output, snapshot before)}, all run in one process."""
    root = tmp_path_factory.mktemp("file_scenes")
    scenes = {}
    for script in FILE_SCRIPTS:
        for case in FILE_CASES:
            folder = root / script.removesuffix(".py") / case.replace(" ", "_")
            folder.mkdir(parents=True)
            vocab = pretraining_records.write_vocab(folder / "vocab.txt")
            corpus, output = _file_scene(folder, case)
            flags = [f.format(input=corpus, output=output, vocab=vocab, tmp=folder) for f in FILE_SCRIPTS[script]]
            scenes[(script, case)] = (folder, output, snapshot(folder), (script, flags, folder))
    results = run_in_one_process({key: scene[3] for key, scene in scenes.items()})
    return {key: (results[key], *scene[:3]) for key, scene in scenes.items()}


@pytest.mark.parametrize("case", FILE_CASES)
@pytest.mark.parametrize("script", FILE_SCRIPTS)
def test_an_output_file_that_is_an_input_through_a_link_is_refused_and_kept(file_refusals, script, case):
    result, folder, output, before = file_refusals[(script, case)]
    assert_user_error(result, f"--output_file={output} is also an input", "writing the output would replace it")
    assert snapshot(folder) == before


def test_prepare_corpus_rerun_on_a_damaged_input_keeps_the_earlier_output(tmp_path):
    """Issue 40: the rerun deleted the earlier good output before it found the unclosed <doc>."""
    article = '<doc id="{0}" title="T{0}">\nT{0}\n\nArticle {0} has text. It has two sentences.\n'
    good = tmp_path / "good.txt"
    good.write_text("".join(article.format(i) + "</doc>\n" for i in range(3)))
    out = tmp_path / "out" / "corpus.txt"
    flags = [f"--output_file={out}@2", "--unit_mb=0.00001", "--input_format=wikiextractor"]
    assert run_script("prepare_corpus.py", f"--input_file={good}", *flags).returncode == 0
    before = snapshot(tmp_path / "out")
    assert len(before) == 4  # two shards, stats/ and the summary
    damaged = tmp_path / "damaged.txt"
    damaged.write_text("".join(article.format(i) + "</doc>\n" for i in range(2)) + article.format(2))  # unclosed
    result = run_script("prepare_corpus.py", f"--input_file={damaged}", *flags)
    assert_user_error(result, "damaged.txt")
    assert snapshot(tmp_path / "out") == before  # the earlier output, its summary, and no temporary file


def test_prepare_corpus_rerun_with_fewer_shards_leaves_no_old_shard(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(f"Document {i} has one sentence. And another one." for i in range(8)) + "\n")
    out = tmp_path / "out"
    flags = [f"--input_file={corpus}", "--unit_mb=0.00001"]
    assert run_script("prepare_corpus.py", *flags, f"--output_file={out}/c@4").returncode == 0
    (out / "notes.txt").write_text("mine\n")  # a user's file beside the shards is not the job's to remove
    assert run_script("prepare_corpus.py", *flags, f"--output_file={out}/c@2").returncode == 0
    assert sorted(p.name for p in out.iterdir()) == ["c-00000-of-00002", "c-00001-of-00002", "notes.txt", "stats"]
    summary = json.loads((out / "stats" / "c.json").read_text())
    assert summary["output_files"] == [f"{out}/c-00000-of-00002", f"{out}/c-00001-of-00002"]
    text = (out / "c-00000-of-00002").read_text() + "\n" + (out / "c-00001-of-00002").read_text()
    assert text.count("has one sentence.") == 8


@pytest.mark.parametrize("text", ['{"accuracy": 0.9}', "[1, 2]", '[{"epoch": 1}]', "not json"])
def test_an_eval_history_the_job_did_not_write_is_one_clean_message(tmp_path, text):
    """Issue 40: a foreign eval_history.json in a run's folder gave a TypeError; now it is a user error naming it."""
    from official.nlp.common.errors import InputError
    from official.nlp.tasks import finetuning_outputs

    (tmp_path / "eval_history.json").write_text(text)
    with pytest.raises(InputError, match=r"eval_history.json is not an evaluation history that a fine-tuning run"):
        finetuning_outputs.read_history(str(tmp_path))
    (tmp_path / "eval_history.json").write_text('[{"epoch": 1, "step": 4, "accuracy": 0.5}]')
    assert finetuning_outputs.read_history(str(tmp_path)) == [{"epoch": 1, "step": 4, "accuracy": 0.5}]
