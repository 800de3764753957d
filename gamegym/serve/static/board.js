// Drawing a position and playing it by clicks.
//
// renderPosition(container, view, options) draws view.board (the game's board_at grid) or,
// for a game without one, view.text and a button per legal move.
// options: {active: bool, onMove(action), onRefused(text), shares: [{action, share}],
//           marked: [cells] (the last move's cells)}
// A move is played when the clicks made so far are all the clicks of one move (board.moves:
// [{action, clicks: [[cells], ...]}]; each step lists the cells any of which counts).  Steps
// that every remaining move shares (Santorini's only worker) are chosen by themselves.
"use strict";

function matching(moves, chosen) {
  return moves.filter(m => m.clicks.length >= chosen.length &&
                           chosen.every((cell, i) => m.clicks[i].includes(cell)));
}

function autoSteps(moves, chosen) {
  // add the steps every remaining move shares, as long as no move is complete
  for (;;) {
    const left = matching(moves, chosen);
    if (!left.length || left.some(m => m.clicks.length <= chosen.length + 1)) return chosen;
    const step = left[0].clicks[chosen.length];
    if (step.length !== 1 || !left.every(m => m.clicks[chosen.length].length === 1 &&
                                             m.clicks[chosen.length][0] === step[0])) {
      return chosen;
    }
    chosen = chosen.concat([step[0]]);
  }
}

function deciding(moves) {
  // the first click step where the legal moves differ: shares are summed on its cells
  if (!moves.length) return 0;
  const longest = Math.max(...moves.map(m => m.clicks.length));
  for (let i = 0; i < longest; i++) {
    const first = moves[0].clicks[i];
    if (!moves.every(m => m.clicks[i] && m.clicks[i][0] === (first && first[0]))) return i;
  }
  return 0;
}

function renderPosition(container, view, options) {
  options = options || {};
  container.innerHTML = "";
  const board = view.board;
  if (!board) return renderText(container, view, options);
  const grid = document.createElement("div");
  grid.className = "board " + (board.style || "marks") + (options.active ? " active" : "");
  grid.style.gridTemplateColumns = `repeat(${board.columns}, var(--cell))`;
  const cells = [];
  board.cells.forEach((cell, i) => {
    const div = document.createElement("div");
    div.className = "cell";
    div.dataset.cell = String(i);
    if (cell.level !== undefined) {
      div.classList.add("level-" + cell.level);
      const level = document.createElement("span");
      level.className = "level";
      level.textContent = cell.level > 0 && cell.level < 4 ? String(cell.level) : "";
      div.appendChild(level);
      if (cell.level === 4) {
        const dome = document.createElement("span");
        dome.className = "dome";
        div.appendChild(dome);
      }
    }
    if (cell.piece !== undefined) {
      const piece = document.createElement("span");
      piece.className = "piece p" + cell.piece;
      piece.textContent = cell.label || "";
      div.appendChild(piece);
    } else if (cell.label) {
      const label = document.createElement("span");
      label.textContent = cell.label;
      div.appendChild(label);
    }
    grid.appendChild(div);
    cells.push(div);
  });
  const moves = board.moves || [];
  const byAction = new Map(moves.map(m => [m.action, m]));
  if (options.shares && options.shares.length && moves.length) {
    const step = deciding(moves);
    const sums = new Map();
    for (const s of options.shares) {
      const m = byAction.get(s.action);
      if (!m) continue;
      const cell = m.clicks[Math.min(step, m.clicks.length - 1)][0];
      sums.set(cell, (sums.get(cell) || 0) + s.share);
    }
    for (const [cell, share] of sums) {
      const tag = document.createElement("span");
      tag.className = "share";
      tag.textContent = Math.round(share * 100) + "%";
      cells[cell].appendChild(tag);
    }
  }
  for (const cell of options.marked || []) cells[cell].classList.add("last");
  container.appendChild(grid);
  if (!options.active) return;

  let chosen = autoSteps(moves, []);
  const show = () => {
    cells.forEach(c => c.classList.remove("target", "selected"));
    chosen.forEach(i => cells[i].classList.add("selected"));
    for (const m of matching(moves, chosen)) {
      const next = m.clicks[chosen.length];
      if (next) cells[next[0]].classList.add("target");
    }
  };
  grid.addEventListener("click", event => {
    const div = event.target.closest(".cell");
    if (!div) return;
    const cell = Number(div.dataset.cell);
    const fixed = autoSteps(moves, []);
    if (chosen.length > fixed.length && chosen[chosen.length - 1] === cell) {
      chosen = fixed;      // a click on the last chosen cell takes it back
      show();
      return;
    }
    let next = chosen.concat([cell]);
    if (!matching(moves, next).length) next = autoSteps(moves, []).concat([cell]);  // start again
    const left = matching(moves, next);
    if (!left.length) {
      chosen = autoSteps(moves, []);
      show();
      if (options.onRefused) options.onRefused("no move starts there");
      return;
    }
    const done = left.find(m => m.clicks.length === next.length);
    if (done) {
      options.onMove(done.action);
      return;
    }
    chosen = autoSteps(moves, next);
    show();
  });
  show();
}

function renderText(container, view, options) {
  const pre = document.createElement("pre");
  pre.className = "text-board";
  pre.textContent = view.text || "";
  container.appendChild(pre);
  if (!options.active) return;
  const buttons = document.createElement("div");
  buttons.className = "move-buttons";
  for (const move of view.moves) {
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.action = String(move.action);
    button.textContent = move.text;
    button.addEventListener("click", () => options.onMove(move.action));
    buttons.appendChild(button);
  }
  container.appendChild(buttons);
}

function sharesList(shares) {
  const list = document.createElement("ul");
  list.className = "shares";
  for (const s of shares || []) {
    const item = document.createElement("li");
    const bar = document.createElement("span");
    bar.className = "bar";
    bar.style.width = Math.max(2, Math.round(s.share * 120)) + "px";
    item.appendChild(bar);
    item.appendChild(document.createTextNode(`${(s.share * 100).toFixed(0)}% ${s.text}`));
    list.appendChild(item);
  }
  return list;
}
