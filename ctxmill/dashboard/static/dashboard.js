/* ctxmill dashboard: draws the ledger's figures with Chart.js. Served, it reads the JSON API beside
   it (api/summary, api/session, api/memory); standalone (ctxmill replay --html) it reads the data
   embedded in the page (#ctxmill-data) and hides the memory browser. */
(function () {
  "use strict";
  const RAW = "#9aa5b1", SENT = "#2f80ed", SAVED = "#27ae60", MONEY = "#f2994a";
  const PALETTE = ["#2f80ed", "#27ae60", "#f2994a", "#9b51e0", "#eb5757", "#56ccf2", "#219653", "#f2c94c", "#bb6bd9", "#828282"];
  const charts = {};
  let embedded = null;

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

  function totals(t, note) {
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
    if (note) el("cost-note").textContent = note;
  }

  function days(rows) {
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

  function table(id, rows, key, title) {
    const head = "<tr><th>" + title + "</th><th>requests</th><th>tokens before</th><th>tokens sent</th><th>saved</th><th>cost without</th><th>cost with</th><th>expanded</th></tr>";
    el(id).innerHTML = head;
    for (const r of rows) {
      const tr = document.createElement("tr");
      for (const value of [r[key] || "–", tokens(r.requests), tokens(r.tokens_before), tokens(r.tokens_after),
                           pct(r.tokens_saved, r.tokens_before), money(r.cost_without), money(r.cost_with), tokens(r.expansions || 0)]) {
        const td = document.createElement("td");
        td.textContent = value;
        tr.appendChild(td);
      }
      el(id).appendChild(tr);
    }
  }

  async function showSession(key) {
    const rows = embedded ? embedded.requests[key] || [] : (await getJSON("api/session?id=" + encodeURIComponent(key))).requests;
    sessionChart(rows);
  }

  function sessions(rows) {
    const select = el("session-select");
    select.innerHTML = "";
    for (const r of rows) {
      const option = document.createElement("option");
      option.value = r.session;
      option.textContent = (r.project ? r.project + " · " : "") + String(r.session).slice(0, 40) + " (" + r.requests + " requests)";
      select.appendChild(option);
    }
    select.onchange = () => showSession(select.value).catch(report);
    if (rows.length) return showSession(rows[0].session);
    sessionChart([]);
  }

  function render(data, note) {
    totals(data.totals, note);
    days(data.days);
    bars("chart-stages", data.stages.map((s) => s.stage), data.stages.map((s) => s.tokens), "tokens removed");
    bars("chart-kinds", data.kinds.map((k) => k.kind), data.kinds.map((k) => k.tokens), data.kinds_label || "tokens removed");
    table("projects", data.projects, "project", "project");
    table("sessions", data.sessions, "session", "session");
    if (data.peers && data.peers.length) {
      el("peers-panel").hidden = false;
      bars("chart-peers", data.peers.map((p) => p.name), data.peers.map((p) => p.cost_ratio), "modelled cost vs raw");
    }
    return sessions(data.sessions);
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
    el("memory-status").textContent = data.error || (data.entries.length + (query ? " matching entries" : " entries"));
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
      return render(embedded.summary, embedded.note);
    }
    el("memory-search").onsubmit = (event) => { event.preventDefault(); memory().catch(report); };
    await Promise.all([getJSON("api/summary").then((data) => render(data)), memory()]);
  }

  const start = () => main().then(() => { document.body.dataset.ready = "1"; }, report);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
