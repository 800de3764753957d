"""TensorFlow's set-up: its import leaves out the optional libraries Keras would pull in for
features gamegym does not use, and those libraries import as usual afterwards."""

import json
import subprocess
import sys
import textwrap
import threading

import pytest

from gamegym.nets.tfsetup import OPTIONAL_EXTRAS, without_optional_extras


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package `ggprobe` with a module `ggprobe.part`, importable from `tmp_path`."""
    (tmp_path / "ggprobe").mkdir()
    (tmp_path / "ggprobe" / "__init__.py").write_text("VALUE = 1\n")
    (tmp_path / "ggprobe" / "part.py").write_text("VALUE = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "ggprobe"
    for name in ("ggprobe", "ggprobe.part"):
        sys.modules.pop(name, None)


def test_hidden_packages_cannot_be_imported_in_the_block_and_can_after_it(package):
    with without_optional_extras((package,)):
        with pytest.raises(ModuleNotFoundError, match="ggprobe is not imported") as error:
            __import__(package)
        assert error.value.name == "ggprobe"
        with pytest.raises(ModuleNotFoundError, match="ggprobe is not imported"):
            __import__("ggprobe.part")  # its modules too: the package comes first
    assert __import__("ggprobe.part").part.VALUE == 2
    assert not any(type(finder).__name__ == "_Hidden" for finder in sys.meta_path)


def test_a_package_imported_before_the_block_stays_as_it_is(package):
    before = __import__(package)
    with without_optional_extras((package,)):
        assert __import__(package) is before
        assert __import__("ggprobe.part").part.VALUE == 2  # its modules load as usual


def test_other_threads_import_the_hidden_packages_meanwhile(package):
    found = []
    with without_optional_extras((package,)):
        thread = threading.Thread(target=lambda: found.append(__import__(package).VALUE))
        thread.start()
        thread.join()
    assert found == [1]


def test_the_block_removes_its_finder_when_the_import_fails(package):
    with pytest.raises(ZeroDivisionError), without_optional_extras((package,)):
        raise ZeroDivisionError
    assert __import__(package).VALUE == 1


@pytest.mark.slow
def test_tensorflow_and_keras_import_without_the_extras_and_train():
    """In a fresh process: none of the extras comes with TensorFlow and Keras, a model still
    trains, and each extra that is installed imports afterwards."""
    script = textwrap.dedent(
        f"""
        import importlib, importlib.util, json, sys
        from gamegym.nets.tfsetup import configure_tensorflow
        configure_tensorflow(use_gpu=False)
        loaded = [name for name in {OPTIONAL_EXTRAS!r} if name in sys.modules]
        import keras, numpy as np
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        model.compile("adam", "mse")
        loss = model.fit(np.ones((8, 3)), np.ones((8, 2)), verbose=0).history["loss"][-1]
        later = [name for name in {OPTIONAL_EXTRAS!r} if importlib.util.find_spec(name)]
        for name in later:
            importlib.import_module(name)
        print(json.dumps({{"loaded": loaded, "loss": loss, "later": later}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["loaded"] == []
    assert report["loss"] >= 0.0
    assert "matplotlib" in report["later"]  # a dependency of gamegym: it imports after the block
