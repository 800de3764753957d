"""The network, predict, selfplay and evaluate sections (the train section is in train.py, the
search section nested in selfplay in search.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gamegym.config.checks import (
    ConfigError,
    boolean,
    check,
    choice,
    float_in,
    int_in,
    nested,
    registered,
)
from gamegym.config.search import SearchConfig
from gamegym.game.playerspecs import check_player_spec
from gamegym.registry import BACKENDS

__all__ = ["NetworkConfig", "PredictConfig", "SelfplayConfig", "EvaluateConfig", "PRECISIONS"]

PRECISIONS = ("float32", "int8")  # predict.precision: the CPU fast path's arithmetic


@dataclass
class NetworkConfig:
    """Shape of the network built for a new session (fixed for the session's life)."""

    _section = "network."
    kind: str = "auto"  # "auto" (by board shape), "dense" or "residual"
    width: int = 64  # units per dense layer / filters per conv layer
    blocks: int = 2  # dense layers / residual blocks
    l2: float = 1e-4  # L2 weight regularisation

    def validate(self) -> None:
        choice(self, "kind", ("auto", "dense", "residual"))
        int_in(self, "width", 1, 4096)
        int_in(self, "blocks", 1, 64)
        float_in(self, "l2", 0.0, 1.0)


@dataclass
class PredictConfig:
    """The batching Predictor."""

    _section = "predict."
    batchsize: int = 64  # largest batch of positions per network call
    batch_timeout_ms: float = 2.0  # how long to wait for more requests before running a batch
    use_gpu: bool = True  # use a GPU when TensorFlow sees one
    numpy_fastpath: bool = True  # run models of known layers on the CPU fast path (ONNX Runtime,
    #                                or NumPy for dense ones) instead of TensorFlow; conv models
    #                                stay on TensorFlow when it has a GPU
    evaluate_in_selfplayers: bool = True  # Selfplayers run a fast-path model themselves (no
    #                                       round trip to the Predictor for each batch)
    gpu_memorylimit: int = 0  # MiB of GPU memory for the predictor; 0 = grow as needed
    precision: str = "float32"  # the CPU fast path's arithmetic: "float32", or "int8" (the
    #                             Trainer quantizes each conv model it publishes, checked
    #                             against float32 and kept float32 when they disagree;
    #                             gamegym.nets.quantize); training stays float32
    int8_value_tolerance: float = 0.15  # the check of an int8 model: the largest |value - the
    #                                     float32 value| over its check positions (values in
    #                                     [-1, 1]; 2 accepts every int8 model)
    int8_policy_tolerance: float = 0.1  # and the largest total-variation distance of its policy
    #                                     from float32's (in [0, 1]; 1 accepts every one)

    def validate(self) -> None:
        int_in(self, "batchsize", 1, 65536)
        choice(self, "precision", PRECISIONS)
        float_in(self, "int8_value_tolerance", 0.0, 2.0)
        float_in(self, "int8_policy_tolerance", 0.0, 1.0)
        float_in(self, "batch_timeout_ms", 0.0, 10_000.0)
        boolean(self, "use_gpu")
        boolean(self, "numpy_fastpath")
        boolean(self, "evaluate_in_selfplayers")
        int_in(self, "gpu_memorylimit", 0)

    def int8_tolerances(self) -> tuple[float, float]:
        """(value, policy) tolerances of the int8 check (gamegym.nets.quantize.checked_int8)."""
        return self.int8_value_tolerance, self.int8_policy_tolerance


@dataclass
class SelfplayConfig:
    """Selfplayer processes: their search, the games they play, and where they run."""

    _section = "selfplay."
    selfplayprocesses: int = 2  # number of Selfplayer processes
    search: SearchConfig = field(default_factory=SearchConfig)  # the search of each move
    playout_cap_probability: float = 1.0  # chance of a full search (`search.searchcount`)
    #                                 per move; the others get `fast_searchcount`, no
    #                                 Dirichlet noise, and are no policy targets (their value
    #                                 target stays the game result, which does not depend on
    #                                 the search); 1 = off; KataGo uses 0.25
    fast_searchcount: int = 20  # searches of a fast move (playout-cap randomization)
    temperature: float = 1.0  # move choice ~ visits^(1/temperature) in the opening
    #                                 (bootstrapped: ~ softmax(Q / temperature) of its head;
    #                                 gumbel: not used, the root's Gumbel noise samples the move)
    temperature_drop_move: int = 8  # from this move on, play the most visited move (temperature 0)
    #                                 (bootstrapped: the acting head's best move)
    max_moves: int = 200  # a game reaching this many moves is truncated
    gamelog_dump_threshold: int = (
        10  # finished games kept in memory before a sample file is written
    )
    evaluation_cache: int = 100_000  # network evaluations remembered per Selfplayer (0 = off;
    #                                   at most 64 MB of them, fewer on a large action space)
    positions_per_iteration: int = 0  # a Selfplayer waits for the next model once the games
    #                                   it finished with the newest one hold this many
    #                                   positions (0 = never waits; bootstrapped: its own field)
    nice: int = 0  # Selfplayers run this much below the other processes' CPU priority (0-19;
    #                 Unix): where the Trainer and the Selfplayers share the cores, the Trainer
    #                 then gets the CPU it asks for and self-play takes the rest (0 = equal)
    backend: str = "processes"  # where Selfplayers run: "processes" here, or "ray" (a cluster)
    ray_address: str = "local"  # "local": start Ray on this machine; "auto" or "HOST:PORT":
    #                                 join a running cluster (selfplayprocesses is then per node)
    ray_selfplayer_cpus: float = 0.5  # CPUs a Selfplayer actor reserves on its node
    ray_predictor_cpus: float = 0.5  # CPUs the Predictor actor of each node reserves
    ray_object_store_mib: int = 128  # object store of the Ray started with "local" (it holds
    #                                   only models in broadcast and games on their way)

    def __post_init__(self) -> None:
        if isinstance(self.search, str):  # the root rule's place before the search section
            raise ConfigError(
                f"config field 'selfplay.search' is the search section (a JSON object), got "
                f"{self.search!r}; the root rule is 'selfplay.search.rule', e.g. "
                '{"selfplay": {"search": {"rule": "gumbel"}}}'
            )
        nested(self, "search", SearchConfig)

    def validate(self) -> None:
        int_in(self, "selfplayprocesses", 1, 256)
        self.search.validate()
        float_in(self, "playout_cap_probability", 0.0, 1.0, low_open=True)
        int_in(self, "fast_searchcount", 1, 1_000_000)
        float_in(self, "temperature", 0.0, 100.0)
        int_in(self, "temperature_drop_move", 0)
        int_in(self, "max_moves", 1)
        int_in(self, "gamelog_dump_threshold", 1, 100_000)
        int_in(self, "evaluation_cache", 0)
        int_in(self, "positions_per_iteration", 0)
        int_in(self, "nice", 0, 19)
        registered(self, "backend", BACKENDS)
        check(
            isinstance(self.ray_address, str)
            and (self.ray_address in ("local", "auto") or ":" in self.ray_address),
            "selfplay.ray_address",
            f"must be 'local', 'auto' or a cluster address HOST:PORT, got {self.ray_address!r}",
        )
        float_in(self, "ray_selfplayer_cpus", 0.0, 1024.0, low_open=True)
        float_in(self, "ray_predictor_cpus", 0.0, 1024.0, low_open=True)
        int_in(self, "ray_object_store_mib", 75, 1_000_000)


@dataclass
class EvaluateConfig:
    """The optional Evaluator: the newest iteration against earlier ones and baselines."""

    _section = "evaluate."
    every: int = 0  # evaluate every N-th iteration (0 = no Evaluator process)
    games: int = 20  # games per opponent (half of them as first player)
    # the players to meet: player specs (as `gamegym evaluate --opponent`), or "previous" for
    # the iteration rated before
    opponents: list = field(default_factory=lambda: ["random", "alphabeta:2", "previous"])
    # the model players' search: the Evaluator's, and that of `gamegym evaluate`, `gamegym
    # play` and the web page (each sets the searches per move with its own option); no root
    # noise, the most visited move is played; the Python core unless set (a match then loads
    # no numba)
    search: SearchConfig = field(
        default_factory=lambda: SearchConfig(searchcount=50, core="python")
    )

    def __post_init__(self) -> None:
        nested(self, "search", SearchConfig)

    def validate(self) -> None:
        int_in(self, "every", 0)
        int_in(self, "games", 1, 10_000)
        self.search.validate()
        check(
            self.search.forced_playouts == 0,
            "evaluate.search.forced_playouts",
            f"must be 0, got {self.search.forced_playouts}: a player's search never forces "
            "playouts (they shape self-play's policy targets: selfplay.search.forced_playouts)",
        )
        check(
            isinstance(self.opponents, list),
            "evaluate.opponents",
            f"must be a list of players, got {self.opponents!r}",
        )
        for opponent in self.opponents:
            problem = check_player_spec(opponent)
            check(problem is None, "evaluate.opponents", f"has a bad entry: {problem}")
