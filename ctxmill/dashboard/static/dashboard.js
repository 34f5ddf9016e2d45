/* ctxmill dashboard: draws the ledger's figures with Chart.js. Served, it reads the JSON API beside
   it (api/summary for the chosen period, api/session, api/memory) and reads it again every
   REFRESH_MS while the tab is shown; standalone (ctxmill replay --html) it reads the data embedded
   in the page (#ctxmill-data), and hides the memory browser, the period and the empty panels. */
(function () {
  "use strict";
  const RAW = "#9aa5b1", SENT = "#2f80ed", SAVED = "#27ae60", MONEY = "#f2994a";
  const PALETTE = ["#2f80ed", "#27ae60", "#f2994a", "#9b51e0", "#eb5757", "#56ccf2", "#219653", "#f2c94c", "#bb6bd9", "#828282"];
  const REFRESH_MS = 5000;
  const UNATTRIBUTED = "not attributed to a stage";
  const charts = {};
  let embedded = null;
  let selected = null;  // the session whose requests are drawn, kept across refreshes
  let SUBTITLE = "";

  const el = (id) => document.getElementById(id);
  const tokens = (n) => Number(n).toLocaleString("en-US");
  const money = (d) => (Math.abs(d) >= 1 ? "$" + d.toLocaleString("en-US", {minimumFractionDigits: 2, maximumFractionDigits: 2})
                                         : "$" + d.toFixed(4));
  const pct = (part, whole) => (whole ? (100 * part / whole).toFixed(1) + "%" : "0%");

  function setFigure(id, value, text) {
    const node = el(id);
    node.textContent = text;
    node.dataset.value = String(value);
  }

  function draw(id, config) {
    if (charts[id]) charts[id].destroy();
    config.options = Object.assign({responsive: true, maintainAspectRatio: false, animation: false}, config.options || {});
    charts[id] = new Chart(el(id), config);
  }

  async function getJSON(path) {
    const response = await fetch(path, {headers: {"accept": "application/json"}});
    if (!response.ok) throw new Error(path + ": HTTP " + response.status);
    return response.json();
  }

  const plural = (n, one, many) => (Number(n) === 1 ? one : many);

  function totals(t, note) {
    el("effective-card").hidden = !("cost_effective_with" in t);
    if ("cost_effective_with" in t) setFigure("total-cost-effective-with", t.cost_effective_with, money(t.cost_effective_with));
    el("sessions-word").textContent = plural(t.sessions, "session", "sessions");
    el("projects-word").textContent = plural(t.projects, "project", "projects");
    el("projects-part").hidden = !t.projects;
    setFigure("total-cost-without", t.cost_without, money(t.cost_without));
    setFigure("total-cost-with", t.cost_with, money(t.cost_with));
    setFigure("total-cost-saved", t.cost_saved, money(t.cost_saved));
    el("total-saved-share").textContent = pct(t.cost_saved, t.cost_without) + " of the cost";
    setFigure("total-tokens-before", t.tokens_before, tokens(t.tokens_before));
    setFigure("total-tokens-after", t.tokens_after, tokens(t.tokens_after));
    setFigure("total-requests", t.requests, tokens(t.requests));
    setFigure("total-sessions", t.sessions, tokens(t.sessions));
    setFigure("total-projects", t.projects, tokens(t.projects));
    setFigure("total-expansions", t.expansions, tokens(t.expansions));
    el("deferred-card").hidden = !("deferred" in t);  // the ledger's; a replay has no latency budget
    if ("deferred" in t) {
      setFigure("total-deferred-share", t.deferred_share, pct(t.deferred, t.requests));
      setFigure("total-deferred", t.deferred, tokens(t.deferred));
    }
    if (note) el("cost-note").textContent = note;
  }

  function days(rows) {
    el("days-panel").hidden = !rows.length;  // a replay has no dates: no time axis
    if (!rows.length) return;
    draw("chart-days", {
      data: {
        labels: rows.map((r) => r.day),
        datasets: [
          {type: "bar", label: "tokens saved", data: rows.map((r) => r.tokens_saved), backgroundColor: SAVED, yAxisID: "tokens"},
          {type: "bar", label: "tokens sent", data: rows.map((r) => r.tokens_after), backgroundColor: SENT, yAxisID: "tokens"},
          {type: "line", label: "$ saved", data: rows.map((r) => r.cost_saved), borderColor: MONEY, backgroundColor: MONEY, yAxisID: "money"},
          {type: "line", label: "markers expanded", data: rows.map((r) => r.expansions), borderColor: "#9b51e0", backgroundColor: "#9b51e0", yAxisID: "count", hidden: !rows.some((r) => r.expansions)},
        ],
      },
      options: {scales: {tokens: {stacked: true, position: "left", title: {display: true, text: "tokens"}},
                         x: {stacked: true},
                         money: {position: "right", grid: {drawOnChartArea: false}, title: {display: true, text: "dollars"}},
                         count: {display: false}}},
    });
  }

  function sessionChart(rows) {
    draw("chart-session", {
      type: "line",
      data: {
        labels: rows.map((_, i) => i + 1),
        datasets: [
          {label: "raw (tokens)", data: rows.map((r) => r.tokens_before), borderColor: RAW, backgroundColor: RAW, pointRadius: 1},
          {label: "sent (tokens)", data: rows.map((r) => r.tokens_after), borderColor: SENT, backgroundColor: SENT, pointRadius: 1},
        ].concat((rows[0] && rows[0].extra) ? Object.keys(rows[0].extra).map((name, i) => (
          {label: name + " (tokens)", data: rows.map((r) => r.extra[name]), borderColor: PALETTE[(i + 2) % PALETTE.length], pointRadius: 1, borderDash: [4, 3]})) : []),
      },
      options: {scales: {x: {title: {display: true, text: "request"}}, y: {title: {display: true, text: "tokens"}, beginAtZero: true}}},
    });
  }

  function bars(id, labels, values, label) {
    el(id).closest(".panel").hidden = !labels.length;  // nothing recorded: no empty frame
    if (!labels.length) return;
    draw(id, {
      type: "bar",
      data: {labels: labels, datasets: [{label: label, data: values, backgroundColor: labels.map((_, i) => PALETTE[i % PALETTE.length])}]},
      options: {indexAxis: "y", plugins: {legend: {display: false}}},
    });
  }

  const FIGURES = [["requests", (r) => tokens(r.requests)], ["tokens before", (r) => tokens(r.tokens_before)],
                   ["tokens sent", (r) => tokens(r.tokens_after)], ["saved", (r) => pct(r.tokens_saved, r.tokens_before)],
                   ["cost without", (r) => money(r.cost_without)], ["cost with", (r) => money(r.cost_with)]];
  const when = (ts) => (ts ? new Date(ts * 1000).toLocaleString() : "–");

  function table(id, rows, columns) {
    el(id).closest(".panel").hidden = !rows.length;
    const head = document.createElement("tr");
    for (const [title] of columns) {
      const th = document.createElement("th");
      th.textContent = title;
      head.appendChild(th);
    }
    el(id).replaceChildren(head);
    for (const r of rows) {
      const tr = document.createElement("tr");
      for (const [, cell] of columns) {
        const td = document.createElement("td");
        td.textContent = cell(r);
        tr.appendChild(td);
      }
      el(id).appendChild(tr);
    }
  }

  function tables(data) {
    const expanded = ["expanded", (r) => tokens(r.expansions || 0)];
    const effective = data.sessions.some((r) => "cost_effective_with" in r) ? [["effective cost with", (r) => money(r.cost_effective_with)]] : [];
    table("projects", data.projects, [["project", (r) => r.project || "–"], ...FIGURES, expanded]);
    table("models", data.models || [], [["model", (r) => r.model || "–"], ["priced as", (r) => r.priced_as || "–"], ...FIGURES]);
    table("sessions", data.sessions, [["session", (r) => r.session || "–"], ...(embedded ? [] : [
      ["client", (r) => r.face || "–"], ["project", (r) => r.project || "–"], ["last request", (r) => when(r.last)]]),
      ...FIGURES, ...effective, expanded]);
  }

  async function showSession(key) {
    selected = key;
    const rows = embedded ? embedded.requests[key] || [] : (await getJSON("api/session?id=" + encodeURIComponent(key))).requests;
    sessionChart(rows);
  }

  function sessions(rows) {
    const select = el("session-select");
    select.innerHTML = "";
    for (const r of rows) {
      const option = document.createElement("option");
      option.value = r.session;
      option.textContent = (r.project ? r.project + " · " : "") + r.session + " (" + r.requests + " " + plural(r.requests, "request", "requests") + ")";
      select.appendChild(option);
    }
    select.onchange = () => showSession(select.value).catch(report);
    const keep = rows.find((r) => r.session === selected);
    if (keep) select.value = keep.session;
    if (rows.length) return showSession(keep ? keep.session : rows[0].session);
    sessionChart([]);
  }

  function render(data, note) {
    totals(data.totals, note);
    days(data.days);
    // served: the headline's savings shared among the stages (they add up); a replay: what it has
    const stages = data.saved_by_stage || data.stages, kinds = data.saved_by_kind || data.kinds;
    const label = (name) => name || UNATTRIBUTED;
    bars("chart-stages", stages.map((s) => label(s.stage)), stages.map((s) => s.tokens), "tokens saved");
    bars("chart-kinds", kinds.map((k) => label(k.kind)), kinds.map((k) => k.tokens), data.kinds_label || "tokens saved");
    el("stages-note").textContent = data.saved_by_stage && stages.length
      ? "The bars add up to the " + tokens(data.totals.tokens_saved) + " tokens saved: each request's saving is shared among "
        + "the stages in proportion to what they had cut in its session so far (a cut is resent in every later request)."
      : "";
    tables(data);
    if (data.peers && data.peers.length) {
      el("peers-panel").hidden = false;
      draw("chart-peers", {
        type: "bar",
        data: {labels: data.peers.map((p) => p.name), datasets: [
          {label: "modelled cost vs raw", data: data.peers.map((p) => p.cost_ratio), backgroundColor: SENT},
          {label: "effective cost vs raw", data: data.peers.map((p) => p.effective_ratio), backgroundColor: MONEY}]},
        options: {indexAxis: "y"},
      });
    }
    return sessions(data.sessions);
  }

  function period() {
    const choice = el("range").value;
    if (choice === "all") return "";
    const now = new Date();
    const since = choice === "today" ? new Date(now.getFullYear(), now.getMonth(), now.getDate())
                                     : new Date(now.getTime() - Number(choice) * 86400000);
    return "?since=" + since.getTime() / 1000;
  }

  async function refresh() {
    render(await getJSON("api/summary" + period()));
    el("subtitle").textContent = SUBTITLE;  // after a failed refresh, the next good one clears its message
    el("updated").textContent = "updated " + new Date().toLocaleTimeString() + " · refreshed every " + REFRESH_MS / 1000 + " s";
  }

  // -- memory browser --------------------------------------------------------------------------
  const token = () => document.querySelector('meta[name="ctxmill-token"]').content;

  async function act(path, body) {
    const response = await fetch(path, {method: "POST", headers: {"content-type": "application/json", "x-ctxmill-token": token()},
                                        body: JSON.stringify(body)});
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.error || "HTTP " + response.status);
    return answer;
  }

  function entryItem(entry) {
    const li = document.createElement("li");
    li.dataset.id = entry.id;
    const text = document.createElement("span");
    text.textContent = "[" + entry.type + "] " + entry.text + (entry.pinned ? " · pinned" : "");
    const pin = document.createElement("button");
    pin.textContent = entry.pinned ? "Unpin" : "Pin";
    pin.className = "pin";
    pin.onclick = () => act("api/memory/pin", {id: entry.id, pinned: !entry.pinned}).then(() => memory()).catch(report);
    const forget = document.createElement("button");
    forget.textContent = "Forget";
    forget.className = "forget";
    forget.onclick = () => act("api/memory/forget", {id: entry.id}).then(() => memory()).catch(report);
    li.append(text, pin, forget);
    return li;
  }

  async function memory() {
    const query = el("memory-query").value;
    const data = await getJSON("api/memory?q=" + encodeURIComponent(query));
    el("memory-entries").replaceChildren(...data.entries.map(entryItem));
    el("memory-pinned").replaceChildren(...data.pinned.map(entryItem));
    el("memory-checkpoint").textContent = data.checkpoint || "none yet";
    const n = data.entries.length;
    el("memory-status").textContent = data.error || (n + (query ? " matching " : " ") + plural(n, "entry", "entries"));
  }

  function report(error) {
    el("subtitle").textContent = "Could not load: " + error.message;
  }

  async function main() {
    const node = document.getElementById("ctxmill-data");
    if (node) {
      embedded = JSON.parse(node.textContent);
      document.title = embedded.title || document.title;
      el("subtitle").textContent = embedded.subtitle || "";
      el("memory-panel").hidden = true;
      el("controls").hidden = true;
      return render(embedded.summary, embedded.note);
    }
    SUBTITLE = el("subtitle").textContent;
    el("memory-search").onsubmit = (event) => { event.preventDefault(); memory().catch(report); };
    el("range").onchange = () => refresh().catch(report);
    await Promise.all([refresh(), memory()]);
    setInterval(() => { if (!document.hidden) refresh().catch(report); }, REFRESH_MS);
  }

  const start = () => main().then(() => { document.body.dataset.ready = "1"; }, report);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
