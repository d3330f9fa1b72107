"""The ``--models`` entries of ``benchmarks.peers``: a model and its scan options."""

import pytest

from benchmarks.peer_detectors import model_options


@pytest.mark.parametrize("entry, expected", [
    ("default", ("default", False, None)),
    ("default@exact", ("default", True, None)),
    ("data/models/x.json@step=1.25", ("data/models/x.json", False, 1.25)),
    ("default@exact@step=1.3", ("default", True, 1.3)),
])
def test_an_entry_names_its_model_and_options(entry, expected):
    assert model_options(entry) == expected


@pytest.mark.parametrize("entry", ["default@fast", "default@step=abc"])
def test_an_unknown_or_malformed_option_is_refused(entry):
    with pytest.raises(SystemExit, match="the options are"):
        model_options(entry)
