"""The web page's server, served by uvicorn on a free loopback port in a thread of the test's
process and asked over HTTP (`serving.running`): what it answers, what it refuses (with a 4xx, a
message and no change), and that it only reads the session folder.  The model is a random
player here (no TensorFlow) except in the one test that plays the real starter network."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from serving import RandomModels, running

from gamegym.data.samples import GameRecord, write_sample_file
from gamegym.data.session import SessionError
from gamegym.serve import create_app
from gamegym.serve.play import ModelPlayers, NotFound
from games.tictactoe import TicTacToe


@pytest.fixture
def session(new_session) -> Path:
    return new_session()


@pytest.fixture
def client(session):
    with running(session) as client:
        yield client


def folder_state(path: Path) -> dict:
    """Every file under a folder with its size and modification time."""
    return {
        str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(path.rglob("*"))
    }


def new_game(client, **body) -> dict:
    response = client.post("/api/games", json={"iteration": 0, **body})
    assert response.status_code == 200, response.text
    return response.json()


def random_game(seed: int = 0) -> GameRecord:
    """A finished random tic-tac-toe game as a Selfplayer records it (uniform visit shares)."""
    graph, rng = TicTacToe(), np.random.default_rng(seed)
    record, vertex, move = GameRecord(), graph.roots[0], 0
    while graph.children_at(vertex):
        actions = graph.actions_at(vertex)
        pi = np.zeros(9, np.float32)
        pi[list(actions)] = 1.0 / len(actions)
        action = int(actions[rng.integers(len(actions))])
        record.x.append(graph.numpify(vertex))
        record.pi.append(pi)
        record.legal.append(graph.legal_mask(vertex))
        record.root_value.append(0.0)
        record.action.append(action)
        vertex = graph.child_by_action(vertex, action)
        move += 1
    score = graph.score_at(vertex)
    record.result = score if move % 2 == 0 else -score
    return record


def test_page_and_static_files(client):
    page = client.get("/")
    assert page.status_code == 200 and '<canvas id="chart-scores"' in page.text
    for name in ("app.js", "board.js", "chart.js", "style.css"):
        assert client.get(f"/static/{name}").status_code == 200
    assert client.get("/static/../app.py").status_code == 404
    assert client.get("/static/%2e%2e/app.py").status_code == 404


def test_session_info(client):
    info = client.get("/api/session").json()
    assert info["game"] == "games.tictactoe:TicTacToe"
    assert info["players"] == ["X", "O"] and info["board"] is True
    assert info["iterations"] == [0] and info["current"] == 0


def test_a_whole_game_with_legal_answers(client):
    state = new_game(client, side="first", searchcount=4)
    graph = TicTacToe()
    assert state["your_turn"] and state["position"]["ply"] == 0
    while not state["position"]["over"]:
        action = state["position"]["board"]["moves"][0]["action"]
        state = client.post(f"/api/games/{state['id']}/move", json={"action": action}).json()
    vertex = graph.roots[0]
    for ply, played in enumerate(state["history"]):
        assert played["side"] == ply % 2
        assert played["action"] in graph.actions_at(vertex)
        vertex = graph.child_by_action(vertex, played["action"])
    assert state["position"]["result"] in ("X won", "O won", "a draw")
    assert state["outcome"] in ("you won", "you lost", "a draw")
    refused = client.post(f"/api/games/{state['id']}/move", json={"action": 0})
    assert refused.status_code == 409 and "over" in refused.json()["error"]


def test_the_model_moves_first_when_the_person_plays_second(client):
    state = new_game(client, side="second")
    assert state["position"]["ply"] == 1 and state["your_turn"] and state["you"] == "O"
    assert state["history"][0]["side"] == 0 and state["model_move"]["ply"] == 0


@pytest.mark.parametrize(
    "body, status, words",
    [
        ({"action": 99}, 400, "not a legal move"),
        ({"action": -1}, 400, "not a legal move"),
        ({"action": "4"}, 400, "must be an integer"),
        ({"action": True}, 400, "must be an integer"),
        ({"action": 4.0}, 400, "must be an integer"),
        ({}, 400, "'action' is missing"),
        ([4], 400, "JSON object"),
    ],
)
def test_bad_moves_change_nothing(client, body, status, words):
    state = new_game(client)
    client.post(f"/api/games/{state['id']}/move", json={"action": 4})
    before = client.get(f"/api/games/{state['id']}").json()
    occupied = before["history"][0]["action"]
    for bad in (body, {"action": occupied}):
        response = client.post(f"/api/games/{state['id']}/move", json=bad)
        assert response.status_code == (status if bad is body else 400), response.text
        assert (words if bad is body else "not a legal move") in response.json()["error"]
    assert client.get(f"/api/games/{state['id']}").json() == before


@pytest.fixture
def python_recursion_limit():
    """Python's default recursion limit, as in a server that has not imported TensorFlow yet
    (which raises it to 3000): 2000 brackets are too deep for the JSON decoder then."""
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(saved)


@pytest.mark.parametrize(
    "data, status, words",
    [
        (b"{", 400, "not JSON"),
        (b"\xff\xfe", 400, "not JSON"),
        (b"", 400, "not JSON"),
        (b"null", 400, "JSON object"),
        (b"[" * 2000 + b"]" * 2000, 400, "nested too deeply"),
        (b"x" * 5000, 413, "over 4096 bytes"),
    ],
    ids=["torn", "not-utf8", "empty", "null", "deep", "too-long"],
)
def test_malformed_json(client, data, status, words, python_recursion_limit):
    state = new_game(client)
    response = client.post(
        f"/api/games/{state['id']}/move",
        content=data,
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == status, response.text
    assert words in response.json()["error"]
    assert client.get(f"/api/games/{state['id']}").json() == state
    assert client.get(f"/api/games/{state['id']}").json()["position"]["ply"] == 0


@pytest.mark.parametrize(
    "body, status, words",
    [
        ({"iteration": 7}, 404, "no model iteration 7"),
        ({"iteration": -1}, 404, "no model iteration -1"),
        ({"iteration": "0"}, 400, "must be an integer"),
        ({}, 400, "'iteration' is missing"),
        ({"iteration": 0, "side": "middle"}, 400, "side"),
        ({"iteration": 0, "searchcount": 0}, 400, "searches per move"),
        ({"iteration": 0, "searchcount": 10**9}, 400, "searches per move"),
    ],
)
def test_bad_new_games(client, body, status, words):
    response = client.post("/api/games", json=body)
    assert response.status_code == status and words in response.json()["error"]


def test_unknown_games_and_paths(client):
    for token in ("nope", "..%2f..%2fconfig.json", "%2e%2e"):
        assert client.get(f"/api/games/{token}").status_code == 404
        assert client.post(f"/api/games/{token}/move", json={"action": 0}).status_code == 404
    assert client.get("/api/games/../../config.json").status_code == 404
    assert client.get("/config.json").status_code == 404


def test_selfplay_replay(client, session):
    records = [random_game(seed) for seed in range(3)]
    write_sample_file(session / "samples" / "0" / "sp-1-000001-1.npz", records)
    games = client.get("/api/selfplay").json()["games"]
    assert len(games) == 3 and {g["file"] for g in games} == {"sp-1-000001-1.npz"}
    first = games[-1]
    assert first["game"] == 0 and first["moves"] == len(records[0])
    replay = client.get(
        "/api/selfplay/game", params={"iteration": 0, "file": first["file"], "game": 0}
    ).json()
    positions = replay["positions"]
    assert len(positions) == len(records[0]) + 1
    assert [p["played"]["action"] for p in positions[:-1]] == records[0].action
    assert positions[0]["shares"][0]["share"] == pytest.approx(1 / 9, abs=1e-3)
    assert positions[-1]["over"] and replay["result"] in ("X won", "O won", "a draw")


@pytest.mark.parametrize(
    "params, status",
    [
        ({"iteration": 0, "file": "../../config.json", "game": 0}, 404),
        ({"iteration": 0, "file": "/etc/passwd", "game": 0}, 404),
        ({"iteration": 0, "file": "..", "game": 0}, 404),
        ({"iteration": 0, "file": "sp-1-000001-1.npz", "game": 9}, 404),
        ({"iteration": 5, "file": "sp-1-000001-1.npz", "game": 0}, 404),
        ({"iteration": "../0", "file": "sp-1-000001-1.npz", "game": 0}, 400),
        ({"iteration": -1, "file": "sp-1-000001-1.npz", "game": 0}, 400),
        ({"iteration": 0, "file": "sp-1-000001-1.npz", "game": "x"}, 400),
    ],
)
def test_replay_refuses_what_is_not_listed(client, session, params, status):
    write_sample_file(session / "samples" / "0" / "sp-1-000001-1.npz", [random_game()])
    response = client.get("/api/selfplay/game", params=params)
    assert response.status_code == status and response.json()["error"]


@pytest.mark.parametrize(
    "params, words",
    [
        ({"iteration": "\u00b2", "game": 0}, "'iteration' must be a non-negative integer"),
        ({"iteration": 0, "game": "\u0663"}, "'game' must be a non-negative integer"),  # ٣
        ({"iteration": "", "game": 0}, "'iteration' must be a non-negative integer"),
        ({"iteration": 0, "game": "1e3"}, "'game' must be a non-negative integer"),
        ({"iteration": 0, "game": 10**12}, "'game' must be a non-negative integer"),
    ],
)
def test_a_bad_replay_index_is_refused(client, session, params, words):
    write_sample_file(session / "samples" / "0" / "sp-1-000001-1.npz", [random_game()])
    response = client.get("/api/selfplay/game", params={"file": "sp-1-000001-1.npz", **params})
    assert response.status_code == 400, response.text
    assert words in response.json()["error"]


def sample_arrays(records) -> dict:
    from gamegym.data.samples import SAMPLE_FORMAT, VERSION_FIELD, records_to_arrays

    return {**records_to_arrays(records), VERSION_FIELD: np.int64(SAMPLE_FORMAT)}


def foreign_game() -> GameRecord:
    """A game of another board (4x4 inputs, 16 actions) than the session's tic-tac-toe."""
    record = GameRecord()
    for move in range(3):
        record.x.append(np.zeros((4, 4, 2), np.float32))
        record.pi.append(np.full(16, 1 / 16, np.float32))
        record.legal.append(np.ones(16, bool))
        record.root_value.append(0.0)
        record.action.append(12 + move)
    record.result = 1.0
    return record


def illegal_game() -> GameRecord:
    """A tic-tac-toe game whose second move is on the first one's cell."""
    record = random_game()
    record.action[1] = record.action[0]
    return record


BAD_FILES = {
    "newer": lambda: {**sample_arrays([random_game()]), "format_version": np.int64(99)},
    "foreign": lambda: sample_arrays([foreign_game()]),
    "lacks a column": lambda: {
        k: v for k, v in sample_arrays([random_game()]).items() if k != "action"
    },
    "illegal": lambda: sample_arrays([illegal_game()]),
    "a game without positions": lambda: {
        **sample_arrays([random_game()]),
        "result": np.array([1.0, -1.0], np.float32),
        "truncated": np.zeros(2, bool),
    },
}


@pytest.mark.parametrize(
    "kind, game, listed, words",
    [
        ("newer", 0, [], "written by a newer gamegym"),
        ("foreign", 0, [], "does not fit the game: x has shape (3, 4, 4, 2)"),
        ("lacks a column", 0, [], "lacks ['action']"),
        ("truncated", 0, [], "damaged sample file"),
        ("illegal", 0, [0], "plays action"),
        ("a game without positions", 1, [0], "holds no positions of game 1"),
    ],
)
def test_a_sample_file_that_cannot_be_replayed_is_refused(
    client, session, kind, game, listed, words
):
    """A damaged file, one of a newer format or of another game: refused with a 422 naming the
    file and the reason; the list leaves out what it cannot show and keeps the rest."""
    folder = session / "samples" / "0"
    write_sample_file(folder / "sp-1-000001-1.npz", [random_game()])
    bad = folder / "sp-1-000002-1.npz"
    if kind == "truncated":
        write_sample_file(bad, [random_game(1)])
        bad.write_bytes(bad.read_bytes()[:200])
    else:
        np.savez(bad, **BAD_FILES[kind]())
    games = client.get("/api/selfplay")
    assert games.status_code == 200, games.text
    assert sorted((g["file"], g["game"]) for g in games.json()["games"]) == [
        ("sp-1-000001-1.npz", 0)
    ] + [(bad.name, g) for g in listed]
    response = client.get(
        "/api/selfplay/game", params={"iteration": 0, "file": bad.name, "game": game}
    )
    assert response.status_code == 422, response.text
    message = response.json()["error"]
    assert bad.name in message and words in message, message
    good = client.get(
        "/api/selfplay/game", params={"iteration": 0, "file": "sp-1-000001-1.npz", "game": 0}
    )
    assert good.status_code == 200


def test_progress_reads_the_gym_records(client, session):
    assert client.get("/api/progress").json()["live"] == []
    status = session / "monitoring" / "status.jsonl"
    rows = [
        {
            "time": 100.0 + i,
            "iteration": 1,
            "games": 10 * i,
            "samples_per_s": 5.0 + i,
            "searches_per_s": 300.0,
            "last_losses": {"loss": 2.0},
        }
        for i in range(3)
    ]
    status.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"time": 10')  # torn line
    (session / "train" / "1.json").write_text(json.dumps({"losses": {"loss": 1.5}}))
    (session / "evaluation" / "results.jsonl").write_text(
        json.dumps(
            {
                "player": "iteration:1",
                "opponent": "random",
                "iteration": 1,
                "wins": 3,
                "draws": 1,
                "losses": 0,
                "games": 4,
                "score": 0.875,
            }
        )
        + "\n"
        + json.dumps(
            {
                "player": "iteration:1",
                "opponent": "iteration:0",
                "iteration": 1,
                "wins": 1,
                "draws": 0,
                "losses": 1,
                "games": 2,
                "score": 0.5,
            }
        )
        + "\n"
    )
    progress = client.get("/api/progress").json()
    assert [r["samples_per_s"] for r in progress["live"]] == [5.0, 6.0, 7.0]
    assert progress["losses"] == [{"iteration": 1, "losses": {"loss": 1.5}}]
    assert progress["evaluation"]["random"][0]["score"] == 0.875
    assert progress["evaluation"]["an earlier iteration"][0]["score"] == 0.5
    with open(status, "a") as handle:  # the torn line completed, one more after it
        handle.write('3.0, "iteration": 2, "samples_per_s": 9.0}\n')
    assert [r["samples_per_s"] for r in client.get("/api/progress").json()["live"]] == [
        5.0,
        6.0,
        7.0,
        9.0,
    ]


def test_only_reads_the_session_even_while_a_gym_holds_it(session):
    me = psutil.Process()
    lock = session / "session.lock"
    lock.write_text(
        json.dumps({"pid": me.pid, "create_time": me.create_time(), "started": time.time()})
    )
    write_sample_file(session / "samples" / "0" / "sp-1-000001-1.npz", [random_game()])
    before = folder_state(session)
    with running(session) as client:
        assert client.get("/api/progress").json()["running"] is True
        state = new_game(client)
        client.post(f"/api/games/{state['id']}/move", json={"action": 4})
        client.get("/api/selfplay")
        client.get(
            "/api/selfplay/game", params={"iteration": 0, "file": "sp-1-000001-1.npz", "game": 0}
        )
    assert folder_state(session) == before


def test_unknown_session(tmp_path, capsys):
    with pytest.raises(SessionError, match="no session folder"):
        create_app(tmp_path / "missing")
    (tmp_path / "plain").mkdir()
    with pytest.raises(SessionError, match="not a gamegym session"):
        create_app(tmp_path / "plain")
    from gamegym.cli.main import main

    assert main(["serve", str(tmp_path / "missing")]) == 2
    assert "no session folder" in capsys.readouterr().err


def test_listening_beyond_this_computer_warns(session, monkeypatch, capsys):
    import uvicorn

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append(kwargs))
    from gamegym.serve import run_server

    assert run_server(session, port=8123) == 0
    assert calls[-1]["host"] == "127.0.0.1" and "warning" not in capsys.readouterr().err
    assert run_server(session, host="0.0.0.0", port=8123) == 0
    assert calls[-1]["host"] == "0.0.0.0" and "warning" in capsys.readouterr().err


@pytest.mark.slow
def test_the_starter_network_answers_with_its_visit_shares(tmp_path):
    """The real thing: the bundled tic-tac-toe network loaded in this process (TensorFlow)."""
    from conftest import TICTACTOE, create_session

    from gamegym.presets import INITIAL_MODELS

    path = create_session(
        tmp_path / "ttt", TICTACTOE, {}, initial_model=INITIAL_MODELS / "tictactoe.keras"
    )
    before = folder_state(path)
    with running(path, players=ModelPlayers) as client:
        state = new_game(client, side="second", searchcount=16)
        shares = state["model_move"]["shares"]
        assert 0 < len(shares) <= 8 and 0.5 < sum(s["share"] for s in shares) <= 1.0 + 1e-6
        assert state["model_move"]["action"] == state["history"][0]["action"]
        again = new_game(client, side="second", searchcount=16)  # the loaded model is kept
        assert again["position"]["ply"] == 1
    assert folder_state(path) == before  # loading and playing the model wrote nothing


def test_a_model_that_cannot_answer_undoes_the_move(session):
    class Vanishing(RandomModels):
        """The model file is gone once the game has started."""

        def player(self, iteration, searchcount, graph):
            raise NotFound("model iteration 0 cannot be loaded: gone")

    with running(session, players=Vanishing) as client:
        state = new_game(client)
        response = client.post(f"/api/games/{state['id']}/move", json={"action": 4})
        assert response.status_code == 404 and "cannot be loaded" in response.json()["error"]
        assert client.get(f"/api/games/{state['id']}").json() == state


def test_a_fault_of_the_server_is_answered_in_json(session):
    """Not a bad request: a 500, still with a message the page can show; the move undone."""

    class Broken(RandomModels):
        def player(self, iteration, searchcount, graph):
            raise RuntimeError("the model fell over")

    with running(session, players=Broken) as client:
        state = new_game(client)
        response = client.post(f"/api/games/{state['id']}/move", json={"action": 4})
        assert response.status_code == 500
        assert "RuntimeError: the model fell over" in response.json()["error"]
        assert client.get(f"/api/games/{state['id']}").json() == state


@pytest.mark.parametrize("port", ["0", "65536", "http", "８０"])
def test_the_port_is_a_port_number(session, capsys, port):
    """The page checks that requests name its port: the system may not pick one (0)."""
    from gamegym.cli.main import main

    with pytest.raises(SystemExit) as stop:
        main(["serve", str(session), "--port", port])
    assert stop.value.code == 2 and "is not a port number (1..65535)" in capsys.readouterr().err
