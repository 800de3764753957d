"""The web page of a session: `gamegym serve SESSION` (watch it learn, replay its self-play
games, play its models in the browser).

  app             the Starlette application and the command (uvicorn); routes and request checks
  guard           which requests reach the routes: Host, Origin, Content-Type, body size
  progress        the progress panel's figures, read from the session folder
  selfplay_games  the latest self-play games, replayed move by move from the sample files
  play            games between a person and a model iteration, in the server process
  boards          positions as the page draws them (the game's optional `board_at`, or text)
  static/         the page: plain HTML, CSS and JavaScript, no build step, nothing from the network

May import the game and data layers (graph, session, samples, fileio), the learners' players
and TensorFlow's set-up (to play a model), Starlette and uvicorn; nothing imports this package
but the command line.  It only reads the session folder: no lock, no write.
"""

from gamegym.serve.app import create_app, run_server

__all__ = ["create_app", "run_server"]
