"""`--what=input` on a tiny classifier and real SST-2 rows: every pipeline feeds the same compiled step."""

import numpy as np
import pytest

from benchmarks import input as input_benchmark


@pytest.fixture(scope="module")
def config(shared_data, uncased_vocab):
    return input_benchmark.InputConfig(
        data_dir=str(shared_data / "glue" / "SST-2"),
        vocab_file=str(uncased_vocab),
        num_layers=1,
        hidden=32,
        heads=2,
        batch=8,
        seq=32,
        num_examples=200,
        steps_per_execution=2,
        rounds=1,
    )


def test_pipelines_have_the_step_shape_and_real_data(config, tmp_path):
    datasets = input_benchmark._datasets(config, input_benchmark._records(config, str(tmp_path)))
    specs = {name: ds.element_spec for name, ds in datasets.items()}
    assert specs["records"] == specs["constant"] == specs["raw text"]
    x, y = specs["records"]
    assert x["input_word_ids"].shape == (8, 32) and y.shape == (8,)
    raw, records = (next(iter(datasets[name].batch(4))) for name in ("raw text", "records"))
    # Real, shuffled SST-2 batches: both labels occur, and the batches differ from one another.
    assert set(np.unique(raw[1].numpy())) == {0, 1} and set(np.unique(records[1].numpy())) == {0, 1}
    assert not np.array_equal(records[0]["input_word_ids"][0], records[0]["input_word_ids"][1])
    # The two real pipelines tokenize alike: [CLS] first and the same packing.
    assert (raw[0]["input_word_ids"][:, :, 0].numpy() == 101).all()
    assert (records[0]["input_word_ids"][:, :, 0].numpy() == 101).all()


def test_run_reports_every_variant(config, capsys):
    results = input_benchmark.run(config)
    assert set(results) == {
        "input/constant",
        "input/records",
        "input/raw text",
        "steps_per_execution/steps_per_execution=2",
        "steps_per_execution/steps_per_execution=1",
    }
    assert all(rate.median > 0 for rate in results.values())
    printed = capsys.readouterr().out
    assert "x constant" in printed and "x steps_per_execution=1" in printed
