// The page: progress (polled), playing against a model, replaying self-play games.
"use strict";

const $ = id => document.getElementById(id);
let info = null;        // /api/session
let game = null;        // the game in play (/api/games/...)
let replay = null;      // the self-play game shown
let replayStep = 0;

async function api(path, body) {
  const response = await fetch(path, body === undefined ? {} : {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  const data = await response.json().catch(() => ({error: response.statusText}));
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

// ----- progress ------------------------------------------------------------------------------
function format(value, digits) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
}

async function refreshProgress() {
  let p;
  try { p = await api("/api/progress"); } catch (error) { return; }
  $("stat-iteration").textContent = p.iteration;
  $("stat-games").textContent = p.games;
  $("stat-samples").textContent = p.samples;
  $("stat-rate").textContent = p.running ? format(p.samples_per_s, 1) : "–";
  $("stat-loss").textContent = format(p.last_losses.loss, 3);
  const rated = Object.entries(p.ratings).filter(([name]) => name.startsWith("iteration:"))
    .map(([name, elo]) => [Number(name.split(":")[1]), elo]).sort((a, b) => a[0] - b[0]);
  $("stat-elo").textContent = rated.length ?
    `${rated[rated.length - 1][1].toFixed(0)} (it ${rated[rated.length - 1][0]})` : "–";
  $("running").textContent = p.running ? "training now" : "not running";
  $("running").classList.toggle("on", p.running);
  const scores = Object.entries(p.evaluation).map(([name, points]) =>
    ({name, points: points.map(q => [q.iteration, q.score])}));
  drawChart($("chart-scores"), scores, {
    ymin: 0, ymax: 1, xlabel: "iteration", integer: true,
    empty: "no evaluation yet (evaluate.every, gamegym evaluate)"});
  const all = [...new Set(p.losses.flatMap(r => Object.keys(r.losses)))].sort();
  const main = all.filter(k => ["loss", "policy_loss", "value_loss"].includes(k));
  const keys = main.length ? main : all.filter(k => !k.startsWith("val_")).slice(0, 4);
  const losses = keys.map(k => ({
    name: k, points: p.losses.filter(r => k in r.losses).map(r => [r.iteration, r.losses[k]])}));
  drawChart($("chart-loss"), losses, {ymin: 0, xlabel: "iteration", integer: true,
                                      empty: "not trained yet"});
  const start = p.live.length ? p.live[0].time : 0;
  const rates = p.live.filter(r => r.samples_per_s !== null)
    .map(r => [(r.time - start) / 60, r.samples_per_s]);
  drawChart($("chart-rate"), [{name: "samples/s", points: rates}],
            {ymin: 0, xlabel: "minutes", empty: "no status records yet"});
  if (info && p.models.length !== info.iterations.length) {
    info.iterations = p.models;
    fillIterations();
  }
}

// ----- playing -------------------------------------------------------------------------------
function fillIterations() {
  const select = $("iteration");
  const kept = select.value;
  select.innerHTML = "";
  for (const it of [...info.iterations].reverse()) {
    const option = document.createElement("option");
    option.value = String(it);
    option.textContent = String(it);
    select.appendChild(option);
  }
  if (kept && info.iterations.includes(Number(kept))) select.value = kept;
}

async function newGame() {
  $("play-error").textContent = "";
  $("play-status").textContent = "starting… (the first game of an iteration loads its model)";
  $("play-board").dataset.state = "busy";
  try {
    showGame(await api("/api/games", {iteration: Number($("iteration").value),
                                      side: $("side").value,
                                      searchcount: Number($("searchcount").value)}));
  } catch (error) {
    $("play-error").textContent = error.message;
    $("play-board").dataset.state = game ? stateOf(game) : "none";
  }
}

async function play(action) {
  $("play-error").textContent = "";
  $("play-status").textContent = "the model is thinking…";
  $("play-board").dataset.state = "busy";
  renderPosition($("play-board"), game.position, {active: false});
  try {
    showGame(await api(`/api/games/${game.id}/move`, {action}));
  } catch (error) {
    $("play-error").textContent = error.message;
    showGame(game);
  }
}

function stateOf(g) {
  return g.position.over ? "over" : g.your_turn ? "your-turn" : "waiting";
}

function showGame(g) {
  game = g;
  const board = $("play-board");
  board.dataset.game = g.id;
  board.dataset.ply = String(g.position.ply);
  const modelMove = g.model_move;
  renderPosition(board, g.position, {
    active: g.your_turn, onMove: play,
    onRefused: text => { $("play-error").textContent = text; },
    marked: modelMove && modelMove.ply === g.position.ply - 1 ? modelMove.cells : []});
  board.dataset.state = stateOf(g);
  $("play-hint").hidden = !g.position.board;
  const names = g.position.players;
  $("play-status").textContent = g.position.over ? "game over" :
    g.your_turn ? `your move (you are ${g.you})` : "the model's move";
  const result = $("play-result");
  result.textContent = g.position.over ? `${g.position.result}: ${g.outcome}` : "";
  result.classList.toggle("lost", g.outcome === "you lost");
  const moveBox = $("model-move");
  moveBox.innerHTML = "";
  if (modelMove) {
    const line = document.createElement("div");
    line.textContent = `iteration ${g.iteration} played ${modelMove.text}` +
      (modelMove.shares.length ? `; its search's visit shares (${g.searchcount} searches):` : "");
    moveBox.appendChild(line);
    moveBox.appendChild(sharesList(modelMove.shares));
  }
  const history = $("play-history");
  history.innerHTML = "";
  for (const h of g.history) {
    const item = document.createElement("li");
    item.textContent = `${names[h.side]}${h.side === g.human ? " (you)" : ""}: ${h.text}`;
    history.appendChild(item);
  }
}

// ----- self-play games -----------------------------------------------------------------------
async function refreshSelfplay() {
  let data;
  try { data = await api("/api/selfplay?count=30"); } catch (error) { return; }
  const list = $("selfplay-list");
  list.innerHTML = "";
  if (!data.games.length) list.textContent = "no self-play games yet";
  for (const g of data.games) {
    const item = document.createElement("li");
    item.textContent = `iteration ${g.iteration}: ${g.moves} moves, ${g.result}`;
    item.dataset.key = `${g.iteration}/${g.file}/${g.game}`;
    if (replay && item.dataset.key === `${replay.iteration}/${replay.file}/${replay.game}`) {
      item.classList.add("chosen");
    }
    item.addEventListener("click", () => openReplay(g, item));
    list.appendChild(item);
  }
}

async function openReplay(g, item) {
  const query = new URLSearchParams({iteration: g.iteration, file: g.file, game: g.game});
  try {
    replay = await api(`/api/selfplay/game?${query}`);
  } catch (error) {
    $("replay-move").textContent = error.message;
    return;
  }
  document.querySelectorAll("#selfplay-list li").forEach(li => li.classList.remove("chosen"));
  item.classList.add("chosen");
  replayStep = 0;
  showReplay();
}

function showReplay() {
  if (!replay) return;
  const last = replay.positions.length - 1;
  replayStep = Math.max(0, Math.min(last, replayStep));
  const view = replay.positions[replayStep];
  renderPosition($("replay-board"), view, {shares: view.shares || [],
                                            marked: view.played ? view.played.cells : []});
  $("replay-board").dataset.step = String(replayStep);
  $("replay-step").textContent = replayStep < last ? `move ${replayStep + 1} of ${last}` :
    "the end";
  const mover = view.players[view.to_move];
  $("replay-move").textContent = view.played ?
    `${mover} to move; played ${view.played.text} (search value ${view.root_value})` :
    "the final position";
  const shares = $("replay-shares");
  shares.innerHTML = "";
  if (view.shares && view.shares.length) {
    shares.appendChild(document.createTextNode("the search's visit shares:"));
    shares.appendChild(sharesList(view.shares));
  }
  $("replay-result").textContent = replayStep === last ? replay.result : "";
}

function stepReplay(delta) { replayStep += delta; showReplay(); }

// ----- start ---------------------------------------------------------------------------------
async function start() {
  info = await api("/api/session");
  $("session-name").textContent = info.session;
  $("session-game").textContent =
    `${info.game} ${JSON.stringify(info.game_args)} · ${info.learner}`;
  $("searchcount").max = String(info.max_searchcount);
  $("searchcount").value = String(info.searchcount);
  fillIterations();
  $("new-game").addEventListener("click", newGame);
  $("replay-first").addEventListener("click", () => stepReplay(-1e9));
  $("replay-prev").addEventListener("click", () => stepReplay(-1));
  $("replay-next").addEventListener("click", () => stepReplay(1));
  $("replay-last").addEventListener("click", () => stepReplay(1e9));
  document.body.dataset.ready = "yes";
  refreshProgress();
  refreshSelfplay();
  setInterval(refreshProgress, 2000);
  setInterval(refreshSelfplay, 10000);
}

start();
