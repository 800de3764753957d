"""The whole config of a session (`GymConfig`): its sections, the learner's own section, its
plugins, the JSON round trip, and the fields a resume may not change.

`GymConfig.from_dict` rejects unknown keys (suggesting the closest known one, or where a moved
key lives now) and values out of range, naming the field; a session's own config.json of an
earlier format is read in today's layout (gamegym.config.layouts).  `check_config` holds the
rules that span sections.  `GymConfig.check_resume` refuses changes to fields fixed at creation.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import json
import math
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from gamegym.config.checks import (
    NO_PLUGINS,
    PENDING_PLUGINS,
    ConfigError,
    boolean,
    check,
    choice,
    field_names,
    float_in,
    int_in,
    registered,
    reject_unknown,
)
from gamegym.config.layouts import learner_config_class, moved_hint, stored_layout
from gamegym.config.sections import EvaluateConfig, NetworkConfig, PredictConfig, SelfplayConfig
from gamegym.config.train import TrainConfig
from gamegym.registry import BACKENDS, LEARNERS, REPLAYS, SEARCHES

if TYPE_CHECKING:
    from gamegym.game.ref import GameRef

__all__ = ["GymConfig", "SECTIONS", "check_config", "merged_settings", "import_plugins"]

SECTIONS = {
    "network": NetworkConfig,
    "predict": PredictConfig,
    "selfplay": SelfplayConfig,
    "train": TrainConfig,
    "evaluate": EvaluateConfig,
}


@dataclass
class GymConfig:
    """Everything a session needs; stored as the session's config.json."""

    game: str = ""  # the game as "package.module:Class"
    game_args: dict = field(default_factory=dict)  # keyword arguments for the game class
    seed: int = 0  # master seed; each process derives its own from it
    debug_single_process: bool = False  # run every role in the main process (for debuggers)
    status_interval: float = 5.0  # seconds between status lines (0 = none)
    heartbeat_timeout: float = 20.0  # seconds without a heartbeat before a child counts as hung
    #                                  and is killed (0 = never)
    progress_timeout: float = 120.0  # seconds a child may beat without counting any work (a
    #                                  training step, a request served, a search, a turn of a
    #                                  waiting loop) before it counts as hung and is killed, as
    #                                  one blocked in a call is (0 = never)
    log_level: str = "INFO"  # level of the per-process logs
    plugins: list = field(default_factory=list)  # modules every process imports before it
    #                                reads the config: where learners, replays, backends or
    #                                search rules of your own register (gamegym.registry)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    predict: PredictConfig = field(default_factory=PredictConfig)
    selfplay: SelfplayConfig = field(default_factory=SelfplayConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    evaluate: EvaluateConfig = field(default_factory=EvaluateConfig)
    # the learner's own section (its config_class, see gamegym.learners.base.Learner), stored in
    # config.json under the learner's name, e.g. "muzero": {...}; None: the learner has none
    learner_config: Any = None

    # fields a resumed session may not change: they would make models or samples meaningless
    # (and a learner section's own FIXED fields)
    FIXED = ("game", "game_args", "network", "train.learner")

    def __post_init__(self) -> None:
        # whether this config's processes import its plugins: True for settings of the
        # user's own; False for a session's config.json (Session.load_config) until
        # `with_plugins`, so a command that only reads a session runs none of its code
        self.runs_plugins = not NO_PLUGINS.get()
        if self.runs_plugins:
            import_plugins(self.plugins)
            pending: tuple[str, ...] = ()
        else:
            _check_module_list(self.plugins)
            pending = tuple(m for m in self.plugins if m not in sys.modules)
        token = PENDING_PLUGINS.set(pending)
        try:
            for name, section_cls in SECTIONS.items():  # sections may be given as plain dicts
                section = getattr(self, name)
                if isinstance(section, dict):
                    reject_unknown(section, field_names(section_cls), f"{name}.", moved_hint(name))
                    setattr(self, name, section_cls(**section))
            if isinstance(self.train, TrainConfig):
                registered(self.train, "learner", LEARNERS)
                self.learner_config = _learner_section(self.train.learner, self.learner_config)
            self.validate()
        finally:
            PENDING_PLUGINS.reset(token)

    @property
    def game_ref(self) -> GameRef:
        """The game as one value (`game` and `game_args`): what every process builds its graph
        from, once (gamegym.game.ref)."""
        from gamegym.game.ref import GameRef

        return GameRef(self.game, self.game_args)

    def unregistered(self) -> list[str]:
        """The registry fields whose names nothing registered, as "field 'name'": names a
        config built without importing its plugins may hold (one of them would register it)."""
        return [
            f"{path} {value!r}"
            for path, registry, value in (
                ("train.learner", LEARNERS, self.train.learner),
                ("train.replay", REPLAYS, self.train.replay),
                ("selfplay.backend", BACKENDS, self.selfplay.backend),
                ("selfplay.search.rule", SEARCHES, self.selfplay.search.rule),
            )
            if not registry.knows(value)
        ]

    def with_plugins(self) -> GymConfig:
        """This config with its plugins imported and every field checked against what they
        register (the same config when they were imported already).  Call it once the user
        has agreed to run the modules it names (gamegym.data.trust)."""
        if self.runs_plugins:
            return self
        if not self.plugins:  # nothing to import, nothing a plugin registers: checked whole
            self.runs_plugins = True
            return self
        import_plugins(self.plugins)
        return GymConfig.from_dict(self.to_dict())

    def validate(self) -> None:
        check(
            isinstance(self.game, str) and ":" in self.game,
            "game",
            f"must look like 'package.module:ClassName', got {self.game!r}",
        )
        check(
            isinstance(self.game_args, dict),
            "game_args",
            f"must be a JSON object, got {self.game_args!r}",
        )
        int_in(self, "seed", 0, 2**32 - 1)
        boolean(self, "debug_single_process")
        float_in(self, "status_interval", 0.0, 3600.0)
        float_in(self, "heartbeat_timeout", 0.0, 3600.0)
        float_in(self, "progress_timeout", 0.0, 86400.0)
        choice(self, "log_level", ("DEBUG", "INFO", "WARNING", "ERROR"))
        for name, cls in SECTIONS.items():
            section = getattr(self, name)
            check(isinstance(section, cls), name, f"must be a {cls.__name__}")
            section.validate()
        if self.learner_config is not None and not isinstance(self.learner_config, dict):
            self.learner_config.validate()  # a dict: the section of an unregistered learner
        check_config(self)

    def __setstate__(self, state: dict) -> None:
        """Unpickled in a child process (or a Ray actor): its plug-ins register there too,
        when this process's config imported them (`runs_plugins`)."""
        self.__dict__.update({"runs_plugins": True, **state})
        if self.runs_plugins:
            import_plugins(self.plugins)

    def selfplayers(self) -> int:
        """Self-play drivers at work: one in a single-process run."""
        return 1 if self.debug_single_process else self.selfplay.selfplayprocesses

    def check_selfplay_pause(self, field: str, positions: int | None) -> str | None:
        """What is wrong with Selfplayers that wait for each new model after `positions`
        positions (the value of config field `field`): together they must play enough for the
        Trainer to train that model, else both would wait forever.  None when it is right."""
        needed = self.samples_per_iteration()
        if not positions or positions * self.selfplayers() >= needed:
            return None
        count = (
            "1 (debug_single_process)"
            if self.debug_single_process
            else f"selfplay.selfplayprocesses ({self.selfplay.selfplayprocesses})"
        )
        return (
            f"'{field}' ({positions}) times {count} must be at least "
            f"train.min_new_samples ({self.train.min_new_samples}) and "
            f"train.min_samplecount / (1 - train.validation_split) ({needed}): the "
            "Selfplayers wait for a model the Trainer trains only on that many samples"
        )

    def samples_per_iteration(self) -> int:
        """New samples the Trainer waits for before it trains an iteration (the first one
        included), with the window replay."""
        train = self.train
        return max(
            train.min_new_samples, math.ceil(train.min_samplecount / (1.0 - train.validation_split))
        )

    def train_options(self) -> SimpleNamespace:
        """The training options a learner reads (by attribute, or gamegym.learners.base.option):
        the train section's fields and the learner's own section's."""
        return SimpleNamespace(**dataclasses.asdict(self.train), **self.learner_options())

    def network_options(self) -> dict:
        """What a learner builds its network from: the network section and the fields of the
        learner's own section that shape the network (its NETWORK tuple)."""
        own = self.learner_options()
        shaping = getattr(self.learner_config, "NETWORK", ())
        return {**dataclasses.asdict(self.network), **{k: own[k] for k in shaping}}

    def learner_options(self) -> dict:
        """The learner's own section as a dict (empty when it has none)."""
        return _section_dict(self.learner_config) if self.learner_config is not None else {}

    # ----- JSON round trip -----------------------------------------------------------------
    def to_dict(self) -> dict:
        data = {
            f.name: dataclasses.asdict(getattr(self, f.name))
            if f.name in SECTIONS
            else copy.deepcopy(getattr(self, f.name))
            for f in fields(self)
            if f.name != "learner_config"
        }
        if self.learner_config is not None:
            data[self.train.learner] = _section_dict(self.learner_config)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, data: dict, stored: int = 0, plugins: bool = True) -> GymConfig:
        """A config from its JSON form.  `stored`: the format version of a session's own
        config.json (gamegym.data.formats.CONFIG_FORMAT), whose layout is read as today's
        (gamegym.config.layouts); 0: settings in today's layout.  `plugins` False:
        its plugins are not imported (`runs_plugins`; a name only one of them could register
        is taken as it is, see `unregistered`, until `with_plugins`)."""
        if not isinstance(data, dict):
            raise ConfigError(f"a config must be a JSON object, got {type(data).__name__}")
        # a copy of a session's config.json: its format version is the session's business
        data = {k: v for k, v in data.items() if k != "format_version"}
        for name in SECTIONS:
            if not isinstance(data.get(name, {}), dict):
                raise ConfigError(f"config field '{name}' must be a JSON object")
        learner = data.get("train", {}).get("learner", TrainConfig.learner)
        if stored:
            data = stored_layout(data, stored, learner)
        known = [n for n in field_names(cls) if n != "learner_config"]
        sections = [n for n in data if n not in known]
        for name in sections:
            if name != learner:
                if isinstance(name, str) and name in LEARNERS:
                    raise ConfigError(
                        f"config section '{name}' is for train.learner "
                        f"'{name}', but train.learner is {learner!r}"
                    )
                reject_unknown({name: None}, known + [learner], "")
        own = data.get(learner, {}) if learner in sections else None
        if own is not None and not isinstance(own, dict):
            raise ConfigError(f"config field '{learner}' must be a JSON object")
        token = NO_PLUGINS.set(not plugins)
        try:
            return cls(**{k: v for k, v in data.items() if k in known}, learner_config=own)
        finally:
            NO_PLUGINS.reset(token)

    @classmethod
    def from_json_file(cls, path: Path, fill: dict | None = None) -> GymConfig:
        """Read a config file; keys missing from it are taken from `fill` (e.g. the game)."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigError(f"cannot read config file {path}: {error}") from error
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ConfigError(f"config file {path} is not valid JSON: {error}") from error
        if isinstance(data, dict) and fill:
            data = {**fill, **data}
        return cls.from_dict(data)

    def updated(self, overrides: dict) -> GymConfig:
        """A copy with nested overrides applied, e.g. {"selfplay": {"search": {"searchcount": 50}}};
        its plugins imported as this one's are (`runs_plugins`)."""
        return GymConfig.from_dict(
            merged_settings(self.to_dict(), overrides), plugins=self.runs_plugins
        )

    def value_at(self, path: str) -> Any:
        """A field by its dotted name, e.g. "train.learner" (None when there is none)."""
        return _get_path(self.to_dict(), path)

    def check_resume(self, stored: GymConfig) -> None:
        """Refuse a config for resuming that changes a field fixed at session creation."""
        new, old = self.to_dict(), stored.to_dict()
        own = getattr(self.learner_config, "FIXED", ())
        for path in self.FIXED + tuple(f"{self.train.learner}.{name}" for name in own):
            a, b = _get_path(new, path), _get_path(old, path)
            if a != b:
                raise ConfigError(
                    f"config field '{path}' cannot change on resume "
                    f"(session has {b!r}, new config has {a!r}); "
                    "start a new session instead"
                )


def merged_settings(data: dict, overrides: dict) -> dict:
    """Config settings (the JSON form) with `overrides` applied as `GymConfig.updated` applies
    them, without building a config: a section (a dict) is updated key by key, and so is a
    section nested in it (selfplay.search); `game_args` and other fields are replaced, and a
    change of train.learner drops the old learner's section."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    before = out.get("train", {}).get("learner", TrainConfig.learner)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "game_args":
            out[key] = _merged_section(out[key], value)
        else:
            out[key] = value
    if out.get("train", {}).get("learner", TrainConfig.learner) != before:
        out.pop(before, None)  # another learner: its own section, not the old one's
    return out


def _merged_section(section: dict, changes: dict) -> dict:
    """A section (JSON form) with `changes` applied key by key, nested sections too."""
    out = dict(section)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged_section(out[key], value)
        else:
            out[key] = value
    return out


def _check_module_list(modules: Any) -> None:
    check(
        isinstance(modules, list) and all(isinstance(m, str) and m for m in modules),
        "plugins",
        f"must be a list of module names, got {modules!r}",
    )
    for module in modules:
        check(
            all(part.isidentifier() for part in module.split(".")),
            "plugins",
            f"names {module!r}, which is not an importable module name (dotted Python names)",
        )


def import_plugins(modules: Any) -> None:
    """Import the `plugins` modules (once each; Python caches them)."""
    _check_module_list(modules)
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as error:
            raise ConfigError(
                f"config field 'plugins': cannot import module {module!r}: "
                f"{type(error).__name__}: {error}"
            ) from error


def _section_dict(section: Any) -> dict:
    """A learner's section as a dict (a dict already: the section of an unregistered one)."""
    return copy.deepcopy(section) if isinstance(section, dict) else dataclasses.asdict(section)


def _learner_section(learner: str, given: Any) -> Any:
    """The learner's section built from `given` (a dict, an instance or None: defaults); the
    dict as it is when the learner is not registered while plugins are pending."""
    if learner not in LEARNERS and PENDING_PLUGINS.get():
        return None if given is None else copy.deepcopy(given)
    section_cls = learner_config_class(learner)
    if section_cls is None:
        check(
            not given,
            learner,
            f"is not a config section: learner {learner!r} has no options of its own",
        )
        return None
    if isinstance(given, section_cls):
        return given
    given = {} if given is None else given
    check(isinstance(given, dict), learner, f"must be a JSON object, got {given!r}")
    reject_unknown(given, field_names(section_cls), f"{learner}.")
    return section_cls(**given)


def _get_path(data: Any, path: str) -> Any:
    for part in path.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def check_config(config: GymConfig) -> None:
    """The rules that span sections, each section's own fields checked already (its
    `validate`): ConfigError naming the field of the first rule broken.  The learner adds its
    own (`Learner.check_config`); the game enters as the config names it (`game`,
    `game_args`): a rule that needs the built game is the learner's `check_fits`."""
    selfplay = config.selfplay
    search = selfplay.search
    if selfplay.playout_cap_probability < 1.0 and selfplay.fast_searchcount > search.searchcount:
        raise ConfigError(
            f"config field 'selfplay.fast_searchcount' ({selfplay.fast_searchcount}) must be <= "
            f"selfplay.search.searchcount ({search.searchcount}) when playout caps are on "
            f"(selfplay.playout_cap_probability {selfplay.playout_cap_probability} < 1)"
        )
    learner = LEARNERS.get(config.train.learner) if config.train.learner in LEARNERS else None
    problem = (
        config.check_selfplay_pause(
            "selfplay.positions_per_iteration", selfplay.positions_per_iteration
        )
        or (learner.check_config(config) if learner is not None else None)
        or check_reanalyze(config)
    )
    if problem:
        raise ConfigError(f"config field {problem}")


def check_reanalyze(config: GymConfig) -> str | None:
    """What keeps `train.reanalyze` > 0 from running with the rest of the config: a
    learner that does not reanalyse (`Learner.reanalyses`), a replay that reads each
    sample file once (its buffer never sees new targets), or Selfplayers that do not see
    the session folder (`SelfplayBackend.local_folder`); None when nothing does."""
    train = config.train
    if not train.reanalyze:
        return None
    learner = LEARNERS.get(train.learner) if train.learner in LEARNERS else None
    replay = REPLAYS.get(train.replay) if train.replay in REPLAYS else None
    backend = BACKENDS.get(config.selfplay.backend) if config.selfplay.backend in BACKENDS else None
    if learner is not None and not getattr(learner, "reanalyses", False):
        return (
            f"'train.reanalyze' ({train.reanalyze}) cannot be used with train.learner "
            f"{train.learner!r}: it does not reanalyse stored positions (MuZero does)"
        )
    if replay is not None and getattr(replay, "uses_buffer", False):
        return (
            f"'train.reanalyze' ({train.reanalyze}) cannot be used with train.replay "
            f"{train.replay!r}: its buffer reads each sample file once and would never "
            "see the reanalysed targets; use train.replay 'window'"
        )
    if (
        backend is not None
        and not config.debug_single_process
        and not getattr(backend, "local_folder", True)
    ):
        return (
            f"'train.reanalyze' ({train.reanalyze}) cannot be used with "
            f"selfplay.backend {config.selfplay.backend!r}: the Selfplayers reanalyse the "
            "session's sample files, which its Selfplayers do not see; use "
            "selfplay.backend 'processes'"
        )
    return None
