"""`gamegym serve SESSION`: the web page's server (Starlette on uvicorn).

Routes (JSON unless said otherwise):
  GET  /                          the page (static/index.html); /static/* its scripts and styles
  GET  /api/session               the game, its side names, the model iterations
  GET  /api/progress              iteration, games, samples/s, losses, evaluation scores (live)
  GET  /api/selfplay              the latest self-play games
  GET  /api/selfplay/game?iteration=I&file=F&game=G   one of them, position by position
  POST /api/games                 {"iteration": I, "side": "first"|"second", "searchcount": N}
  GET  /api/games/{id}            a game in play
  POST /api/games/{id}/move       {"action": A}: the person's move, then the model's answer

Every request passes guard.RequestGuard first: its Host names this server, its Origin (when
sent) is the page's own, a body is application/json of at most MAX_BODY bytes.  A refused
request gets a 4xx status and {"error": message}, and changes nothing.  Nothing from a request
names a file: iterations are ints checked against the model registry, self-play files names
checked against the folder's listing, games in play are server-side tokens.  The server only
reads the session folder (no lock, no write), so a gym may train it meanwhile.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from gamegym.data.trust import read_session
from gamegym.serve.guard import RequestGuard
from gamegym.serve.play import MAX_SEARCHCOUNT, ModelPlayers, PlayError, PlayTable
from gamegym.serve.progress import SessionProgress
from gamegym.serve.selfplay_games import GameLookupError, SelfplayGames

__all__ = ["create_app", "run_server"]

STATIC = Path(__file__).resolve().parent / "static"


def create_app(
    session_path,
    players=ModelPlayers,
    host: str = "127.0.0.1",
    port: int = 8000,
    trust: bool = False,
    ask=None,
) -> Starlette:
    """The application for one session folder, served at `host`:`port` (the Host and Origin
    its requests must name); SessionError when it is not a session.  `players(session,
    config)` makes the model players (tests pass one without TensorFlow).  The session's game
    is imported when it is bundled or allowed for the folder (`trust`, `ask`:
    gamegym.data.trust.read_session); its plugins never are."""
    session, config = read_session(session_path, "serve", trust, ask)
    site = Site(session, config, players)
    routes = [
        Route("/", site.page),
        Route("/favicon.ico", site.no_icon),
        Route("/api/session", site.session_info),
        Route("/api/progress", site.progress_now),
        Route("/api/selfplay", site.selfplay_list),
        Route("/api/selfplay/game", site.selfplay_game),
        Route("/api/games", site.new_game, methods=["POST"]),
        Route("/api/games/{token}", site.game_state),
        Route("/api/games/{token}/move", site.move, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    # Starlette types a handler as taking any Exception; this one is registered for HTTPException
    return Starlette(
        routes=routes,
        middleware=[Middleware(RequestGuard, host=host, port=port)],
        exception_handlers={HTTPException: _error, Exception: _failure},  # type: ignore[dict-item]
    )


class Site:
    """The handlers of one session's page.  The synchronous ones (reading files) run in
    Starlette's thread pool, and so do moves (a model search takes seconds)."""

    def __init__(self, session, config, players):
        self.session, self.config = session, config
        self.graph = config.game_ref.build()  # this process's: the games in play are on it
        self.progress = SessionProgress(session)
        # a graph of its own: its games are read in other threads than the moves are searched
        self.selfplay_games = SelfplayGames(session, config.game_ref.build_new())
        self.table = PlayTable(self.graph, players(session, config), config.selfplay.max_moves)

    async def page(self, request: Request):
        return FileResponse(STATIC / "index.html")

    async def no_icon(self, request: Request):
        return Response(status_code=204)

    def session_info(self, request: Request):
        session, config = self.session, self.config
        return JSONResponse(
            {
                "session": session.path.name,
                "game": config.game,
                "game_args": config.game_args,
                "learner": config.train.learner,
                "players": self.table.names,
                "board": self.graph.has_board,
                "iterations": session.model_iterations(),
                "current": session.current_iteration(),
                "max_searchcount": MAX_SEARCHCOUNT,
                "searchcount": config.evaluate.search.searchcount,
            }
        )

    def progress_now(self, request: Request):
        return JSONResponse(self.progress.snapshot())

    def selfplay_list(self, request: Request):
        count = _int_param(request, "count", 20, 1, 200)
        return JSONResponse({"games": self.selfplay_games.latest(count)})

    def selfplay_game(self, request: Request):
        iteration = _int_param(request, "iteration")
        game = _int_param(request, "game", low=0)
        file = request.query_params.get("file", "")
        try:
            return JSONResponse(self.selfplay_games.game(iteration, file, game))
        except GameLookupError as error:
            raise HTTPException(error.status, str(error)) from error

    async def new_game(self, request: Request):
        body = await _json_body(request)
        iteration = _field(body, "iteration", int)
        side = _field(body, "side", str, "first")
        if side not in ("first", "second"):
            raise HTTPException(400, "side must be 'first' or 'second'")
        searchcount = _field(body, "searchcount", int, self.config.evaluate.search.searchcount)
        return await _in_thread(self.table.new, iteration, 0 if side == "first" else 1, searchcount)

    def game_state(self, request: Request):
        return _answer(self.table.state, request.path_params["token"])

    async def move(self, request: Request):
        body = await _json_body(request)
        action = _field(body, "action", int)
        return await _in_thread(self.table.move, request.path_params["token"], action)


# ----- request checking ------------------------------------------------------------------------
async def _error(request: Request, error: HTTPException) -> JSONResponse:
    return JSONResponse({"error": error.detail}, status_code=error.status_code)


async def _failure(request: Request, error: Exception) -> JSONResponse:
    """A fault of the server, not of the request (uvicorn logs its traceback to the console)."""
    return JSONResponse(
        {"error": f"the server failed: {type(error).__name__}: {error} (see its console)"},
        status_code=500,
    )


async def _json_body(request: Request) -> dict:
    data = await request.body()  # RequestGuard has read it, up to its size limit
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise HTTPException(400, "the request body is not JSON") from None
    except RecursionError:  # a few thousand brackets, within the size limit
        raise HTTPException(400, "the request body's JSON is nested too deeply") from None
    if not isinstance(body, dict):
        raise HTTPException(400, "the request body must be a JSON object")
    return body


_MISSING = object()


def _field(body: dict, name: str, kind: type, default=_MISSING):
    value = body.get(name, default)
    if value is _MISSING:
        raise HTTPException(400, f"'{name}' is missing")
    if isinstance(value, bool) or not isinstance(value, kind):
        raise HTTPException(400, f"'{name}' must be {'an integer' if kind is int else 'a string'}")
    return value


def _int_param(request: Request, name: str, default=None, low=None, high=None) -> int:
    text = request.query_params.get(name)
    if text is None and default is not None:
        return default
    if text is None or not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise HTTPException(400, f"'{name}' must be a non-negative integer")
    value = int(text)
    if (low is not None and value < low) or (high is not None and value > high):
        raise HTTPException(400, f"'{name}' must be in {low}..{high}")
    return value


def _answer(function, *args) -> JSONResponse:
    try:
        return JSONResponse(function(*args))
    except PlayError as error:
        raise HTTPException(error.status, str(error)) from error


async def _in_thread(function, *args) -> JSONResponse:
    """Run a move (a model search: seconds) off the event loop."""
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(_answer, function, *args)


# ----- the command -----------------------------------------------------------------------------
def run_server(
    session_path, host: str = "127.0.0.1", port: int = 8000, trust: bool = False, ask=None
) -> int:
    """Serve the page until Ctrl+C."""
    import uvicorn

    # SessionError for a folder that is not a session
    app = create_app(session_path, host=host, port=port, trust=trust, ask=ask)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"gamegym serve: warning: listening on {host}, not only this computer: anyone who "
            "can reach it can see the session and play its models (there is no login)",
            file=sys.stderr,
        )
    shown = f"[{host}]" if ":" in host else host
    print(f"serving {Path(session_path)} at http://{shown}:{port}/ (Ctrl+C stops)", flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
    return 0
