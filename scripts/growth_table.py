"""How self-play cost grows with the searches per move and the board: one
`gamegym bench throughput` run per row, printed as the README's Markdown table.

    python scripts/growth_table.py [--seconds 20] [--searchcounts 50,100,400,800]

Rows: Santorini 3x3-1 and 5x5-2, Connect Four 6x7 and 8x9, each at every search count; the
Connect Four boards both use the 6x7 preset's network (residual 32x3), the Santorini ones
their own (the preset's dense 128x2 on 3x3-1; 5x5-2 has no preset and gets the default
residual 64x2).  About a minute per row on 2 cores.
"""

import argparse
import json
import subprocess
import sys

GAMES = [
    ("Santorini 3x3-1", "games.santorini:Santorini", {"dimension": 3, "units_per_player": 1}, None),
    ("Santorini 5x5-2", "games.santorini:Santorini", {"dimension": 5, "units_per_player": 2}, None),
    ("Connect Four 6x7", "games.connectfour:ConnectFour", {"rows": 6, "columns": 7}, None),
    (
        "Connect Four 8x9",
        "games.connectfour:ConnectFour",
        {"rows": 8, "columns": 9},
        {"kind": "residual", "width": 32, "blocks": 3},
    ),
]


def bench(game: str, game_args: dict, network, searchcount: int, seconds: float) -> dict:
    command = [
        sys.executable,
        "-m",
        "gamegym",
        "bench",
        "throughput",
        "--game",
        game,
        "--game-args",
        json.dumps(game_args),
        "--searchcount",
        str(searchcount),
        "--seconds",
        str(seconds),
        "--network-seconds",
        "0",
        "--json",
    ]
    if network:
        command += ["--network", json.dumps(network)]
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--searchcounts", default="50,100,400,800")
    args = parser.parse_args()
    print(
        "| game | searches/move | end to end searches/s | efficiency | CPU efficiency | "
        "Selfplayer RSS MB | Predictor RSS MB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, game, game_args, network in GAMES:
        for count in (int(c) for c in args.searchcounts.split(",")):
            f = bench(game, game_args, network, count, args.seconds)
            rss = f["rss_mb_by_role"]
            print(
                f"| {name} | {count} | {f['searches_per_s']:,.0f} | {f['efficiency']:.2f} | "
                f"{f['cpu_efficiency']:.2f} | {rss.get('selfplayer', 0):.0f} | "
                f"{rss.get('predictor', 0):.0f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
