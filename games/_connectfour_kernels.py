"""The Connect Four solver's search (games.connectfour_solver), written once and run two ways:
compiled by numba (the `fast` extra) or, where numba is missing, as plain Python.

A position is two bitboards in ConnectFour's layout (column c owns the ``rows + 1`` bits from
``c * (rows + 1)``, bottom row first, the top bit always empty): `pos`, the discs of the player
to move, and `mask`, every disc.  Every board value is a NumPy uint64 and every constant one of
the module's uint64 constants (ONE, TWO, THREE): numba types an int literal as int64, and
uint64 mixed with int64 becomes float64.  `geometry` is a uint64 array of the board's fixed
masks and shifts (G_* below); `table` is the transposition table's (keys, values); `ctl` is an
int64 array of counters and the stop flag (C_* below), which another thread may set to make a
search return at once.

Scores are Pascal Pons's: 0 for a draw; for a position the player to move wins, the number of
its own discs still unplayed when it plays the winning one, plus one, i.e.
``(cells + 1 - discs) // 2`` for a win with the next disc and one less for each later own move;
the negative of that for a loss.

May import: numpy.  Imported by games.connectfour_solver only, which compiles these functions
or loads a second, uncompiled copy of this file.
"""

from __future__ import annotations

import numpy as np

__all__ = ["negamax", "solve", "move_scores", "winning_cells", "popcount"]

ZERO, ONE, TWO, THREE = np.uint64(0), np.uint64(1), np.uint64(2), np.uint64(3)

# geometry: the rows of the uint64 array a solver passes to every function
G_BOARD, G_BOTTOM, G_FALLING, G_ACROSS, G_RISING, G_COLUMNS = 0, 1, 2, 3, 4, 5
# G_COLUMNS + i: the mask of the i-th column to try (centre first); G_COLUMNS + width + c: the
# mask of column c

# ctl: counters and the flag
C_NODES, C_STOP, C_CELLS, C_WIDTH, C_CUT = 0, 1, 2, 3, 4
# C_CUT: set when a search saw the stop flag and returned early (its answer is not the score); a
# flag set after the search's last check leaves it 0 and the answer stands

# table values (int8, 0 = empty): an upper bound u is kept as u - low + 1, a lower bound l as
# l + high - 2 * low + 2 (above every upper bound's code); low and high are the least and
# greatest score a searched position can have


def _stopped(ctl):
    """Whether the stop flag is set, recording that the search was cut short."""
    if ctl[C_STOP] != 0:
        ctl[C_CUT] = 1
        return True
    return False


def popcount(x):
    """Set bits of a uint64."""
    n = 0
    while x != ZERO:
        x &= x - ONE
        n += 1
    return n


def _lines(pos, s):
    """Cells that complete four along one direction (bits `s` apart) with three of `pos`."""
    s2 = s + s
    s3 = s2 + s
    pair = (pos << s) & (pos << s2)
    cells = (pair & (pos << s3)) | (pair & (pos >> s))
    pair = (pos >> s) & (pos >> s2)
    return cells | (pair & (pos << s)) | (pair & (pos >> s3))


def winning_cells(pos, mask, geometry):
    """Empty cells where a disc of `pos` would make four in a row (playable or not)."""
    cells = (pos << ONE) & (pos << TWO) & (pos << THREE)  # vertical: three below
    cells |= _lines(pos, geometry[G_FALLING])
    cells |= _lines(pos, geometry[G_ACROSS])
    cells |= _lines(pos, geometry[G_RISING])
    return cells & (geometry[G_BOARD] ^ mask)


def _playable(mask, geometry):
    return (mask + geometry[G_BOTTOM]) & geometry[G_BOARD]


def can_win_next(pos, mask, geometry):
    return winning_cells(pos, mask, geometry) & _playable(mask, geometry) != ZERO


def _safe_moves(pos, mask, geometry):
    """The moves that do not lose at once: a forced block if the opponent threatens one cell
    (none if two), and never the cell under one of the opponent's winning cells."""
    playable = _playable(mask, geometry)
    threats = winning_cells(pos ^ mask, mask, geometry)
    forced = playable & threats
    if forced != ZERO:
        if forced & (forced - ONE) != ZERO:
            return ZERO
        playable = forced
    return playable & ~(threats >> ONE)


def _half(x):
    """x / 2 rounded toward zero (C's division, which the score bounds are written in)."""
    return -((-x) // 2) if x < 0 else x // 2


def _bounds(cells):
    return -(cells // 2) + 3, (cells + 1) // 2 - 3


def negamax(pos, mask, discs, alpha, beta, geometry, keys, values, ctl):
    """Fail-hard alpha-beta score of a position whose player to move cannot win at once,
    within [alpha, beta]; returns 0 at once when ctl[C_STOP] is set."""
    ctl[C_NODES] += 1
    if _stopped(ctl):
        return 0
    cells = ctl[C_CELLS]
    safe = _safe_moves(pos, mask, geometry)
    if safe == ZERO:
        return -((cells - discs) // 2)
    if discs >= cells - 2:
        return 0
    least = -((cells - 2 - discs) // 2)  # the opponent cannot win with its next disc
    if alpha < least:
        alpha = least
        if alpha >= beta:
            return alpha
    most = (cells - 1 - discs) // 2  # this player cannot win with its next disc
    low, high = _bounds(cells)
    key = pos + mask
    slot = key % np.uint64(keys.size)
    if keys[slot] == key:
        code = int(values[slot])
        if code > high - low + 1:
            bound = code - high + 2 * low - 2
            if alpha < bound:
                alpha = bound
                if alpha >= beta:
                    return alpha
        elif code > 0:
            bound = code + low - 1
            if most > bound:
                most = bound
    if beta > most:
        beta = most
        if alpha >= beta:
            return beta
    # the safe moves, those that make the most winning cells first, centre first among equals
    width = ctl[C_WIDTH]
    order = np.empty(width, np.uint64)
    rank = np.empty(width, np.int64)
    count = 0
    for i in range(width):
        move = safe & geometry[G_COLUMNS + i]
        if move != ZERO:
            threat = popcount(winning_cells(pos | move, mask | move, geometry))
            j = count
            while j > 0 and rank[j - 1] < threat:
                order[j] = order[j - 1]
                rank[j] = rank[j - 1]
                j -= 1
            order[j] = move
            rank[j] = threat
            count += 1
    for i in range(count):
        move = order[i]
        score = -negamax(
            pos ^ mask, mask | move, discs + 1, -beta, -alpha, geometry, keys, values, ctl
        )
        if _stopped(ctl):
            return 0
        if score >= beta:
            if score >= low:  # (a bound outside [low, high] is no use to keep)
                keys[slot] = key
                values[slot] = score + high - 2 * low + 2
            return score
        if score > alpha:
            alpha = score
    if alpha <= high:
        keys[slot] = key
        values[slot] = alpha - low + 1 if alpha >= low else 0
    return alpha


def solve(pos, mask, discs, weak, geometry, keys, values, ctl):
    """The exact score of a position that is not over (weak: only its sign, -1, 0 or 1), by
    null-window searches that halve the interval the score lies in."""
    cells = ctl[C_CELLS]
    if can_win_next(pos, mask, geometry):
        return 1 if weak else (cells + 1 - discs) // 2
    low = -((cells - discs) // 2)
    high = (cells + 1 - discs) // 2
    if weak:
        low, high = -1, 1
    while low < high:
        middle = low + (high - low) // 2
        if middle <= 0 and _half(low) < middle:
            middle = _half(low)
        elif middle >= 0 and _half(high) > middle:
            middle = _half(high)
        score = negamax(pos, mask, discs, middle, middle + 1, geometry, keys, values, ctl)
        if _stopped(ctl):
            return 0
        if score <= middle:
            high = score
        else:
            low = score
    if weak:  # the searches of the window [-1, 1] bound the score, but only its sign is known
        return 1 if low > 0 else -1 if low < 0 else 0
    return low


def move_scores(pos, mask, discs, weak, geometry, keys, values, ctl, out):
    """out[c] = the score of playing column c, for the player to move (weak: its sign), or
    out[c] = -1000 where column c is full; the position must not be over."""
    cells = ctl[C_CELLS]
    playable = _playable(mask, geometry)
    wins = winning_cells(pos, mask, geometry)
    width = ctl[C_WIDTH]
    for c in range(width):
        move = playable & geometry[G_COLUMNS + width + c]
        if move == ZERO:
            out[c] = -1000
        elif move & wins != ZERO:
            out[c] = 1 if weak else (cells + 1 - discs) // 2
        elif discs + 1 == cells:
            out[c] = 0
        else:
            out[c] = -solve(pos ^ mask, mask | move, discs + 1, weak, geometry, keys, values, ctl)
        if _stopped(ctl):
            return
