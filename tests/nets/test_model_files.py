"""Model files: only the Keras v3 format (.keras) is read, in Keras' safe mode; a model that
carries code (a Lambda layer) or a legacy file is refused with a clear error naming the file."""

import configparser
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from gamegym.nets.tfsetup import import_keras, load_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def keras():
    return import_keras()


def test_a_model_with_a_lambda_layer_is_refused(tmp_path, keras):
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Lambda(lambda x: x * 2.0)(inputs))
    path = tmp_path / "crafted.keras"
    model.save(path)
    assert zipfile.is_zipfile(path)
    with pytest.raises(ValueError, match=re.escape(f"cannot load model file {path}")) as error:
        load_model(path)
    assert "Lambda" in str(error.value)


@pytest.mark.parametrize("name", ["model.h5", "model.hdf5", "model", "model.keras.h5"])
def test_a_legacy_model_file_is_refused_naming_it(tmp_path, keras, name):
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    path = tmp_path / name
    if name.endswith(("h5", "hdf5")):
        model.save(tmp_path / "model.h5")  # legacy HDF5
        (tmp_path / "model.h5").rename(path) if name != "model.h5" else None
    else:
        path.mkdir()  # a SavedModel folder
    with pytest.raises(ValueError, match=re.escape(str(path))) as error:
        load_model(path)
    assert ".keras" in str(error.value)


def test_models_load_in_safe_mode_explicitly(tmp_path, keras, monkeypatch):
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    model.save(tmp_path / "m.keras")
    calls = []
    real = keras.models.load_model
    monkeypatch.setattr(
        keras.models,
        "load_model",
        lambda *args, **kwargs: calls.append(kwargs) or real(*args, **kwargs),
    )
    loaded = load_model(tmp_path / "m.keras")
    x = np.ones((1, 3), np.float32)
    assert np.allclose(loaded(x), model(x))
    assert calls and calls[0].get("safe_mode") is True


def test_the_package_requires_a_keras_with_the_safe_mode_fixes():
    """keras >= 3.12 fixes CVE-2025-1550 and CVE-2025-9905 (safe mode bypasses)."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    requires = parser["options"]["install_requires"].split()
    assert "keras>=3.12" in requires
    assert tuple(int(p) for p in import_keras().__version__.split(".")[:2]) >= (3, 12)
