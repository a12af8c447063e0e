// Skiff's web console: one page, routed by the URL's hash (#/topics, #/group?name=...), reading
// the broker's /api/ JSON. Every text shown goes through textContent (never innerHTML): topic
// names, client ids and message bodies come from outside.
"use strict";

const main = document.getElementById("main");
let overviewCache = null;
// What the last write did, shown above the page it re-renders.
let flash = null;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function link(page, params, text) {
  return el("a", { href: "#/" + page + (params ? "?" + new URLSearchParams(params) : "") }, text);
}

function when(ms) {
  if (!ms || ms <= 0) return "-";
  return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

function num(n) {
  return typeof n === "number" ? n.toLocaleString("en-US") : String(n ?? "-");
}

function duration(seconds) {
  const d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600);
  const m = Math.floor(seconds % 3600 / 60), s = seconds % 60;
  return (d ? d + "d " : "") + (d || h ? h + "h " : "") + m + "m " + s + "s";
}

async function api(path) {
  const response = await fetch("/api/" + path, { cache: "no-store" });
  const body = await response.json().catch(() => ({ error: "HTTP " + response.status }));
  if (!response.ok) throw new Error(body.error || "HTTP " + response.status);
  return body;
}

function base64(text) {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

async function post(path, body, accessKey, secretKey) {
  const headers = { "Content-Type": "application/json" };
  if (accessKey) headers.Authorization = "Basic " + base64(accessKey + ":" + secretKey);
  const response = await fetch("/api/" + path, { method: "POST", headers, body: JSON.stringify(body) });
  const answer = await response.json().catch(() => ({ error: "HTTP " + response.status }));
  if (!response.ok) throw new Error(answer.error || "HTTP " + response.status);
  return answer;
}

function table(headers, rows, numeric) {
  numeric = numeric || [];
  return el("table", {},
    el("thead", {}, el("tr", {}, headers.map((h, i) => el("th", { class: numeric.includes(i) ? "num" : null }, h)))),
    el("tbody", {}, rows.length ? rows.map(row => row instanceof Node ? row :
      el("tr", {}, row.map((cell, i) => el("td", { class: numeric.includes(i) ? "num" : null }, cell))))
      : el("tr", {}, el("td", { colspan: headers.length, class: "muted" }, "none"))));
}

function cards(items) {
  return el("div", { class: "cards" }, items.map(([label, value]) =>
    el("div", { class: "card" }, el("div", { class: "label" }, label), el("div", { class: "value" }, value))));
}

function field(label, name, attrs) {
  return el("label", {}, label, el("input", Object.assign({ name }, attrs || {})));
}

// A write form: the credentials of an ACL admin account, or why writing is off.
function writeForm(title, fields, submit) {
  const writable = overviewCache && overviewCache.writable;
  const status = el("div");
  const form = el("form", {
    onsubmit: async event => {
      event.preventDefault();
      const data = Object.fromEntries(new FormData(form).entries());
      status.replaceChildren();
      try {
        flash = await submit(data, data.accessKey, data.secretKey);
        await route();
      } catch (error) {
        status.appendChild(el("p", { class: "error" }, error.message));
      }
    },
  }, el("strong", {}, title), fields,
  field("Access key (ACL admin)", "accessKey", { autocomplete: "username", disabled: !writable }),
  field("Secret key", "secretKey", { type: "password", autocomplete: "current-password", disabled: !writable }),
  el("button", { type: "submit", disabled: !writable }, title));
  return el("div", {}, form, writable ? null :
    el("p", { class: "muted" }, "Read-only: write actions need aclEnable=true and an ACL account with admin: true."), status);
}

const pages = {
  async overview() {
    const [o, cluster] = await Promise.all([api("overview"),
      api("cluster").catch(error => ({ error: error.message }))]);
    overviewCache = o;
    const runtime = Object.entries(o.runtime || {});
    const brokers = [];
    for (const [name, members] of Object.entries(cluster.clusters || {})) {
      for (const b of members) {
        for (const [id, address] of Object.entries(b.addresses)) {
          brokers.push([name, b.name + (b.name === o.broker && address === o.address ? " (this broker)" : ""),
            id === "0" ? "0 (master)" : id, address]);
        }
      }
    }
    return [
      el("h1", {}, "Broker " + o.broker + " in cluster " + o.cluster),
      cards([
        ["Cluster", o.cluster], ["Broker", o.broker + " (id " + o.brokerId + ")"],
        ["Address", o.address], ["Role", o.brokerRole], ["Skiff version", o.version],
        ["Uptime", duration(o.uptimeSeconds)], ["Name servers", o.nameServers || "none"],
        ["Topics", num(o.userTopics) + " (+" + num(o.topics - o.userTopics) + " system)"],
        ["Subscription groups", num(o.subscriptionGroups)],
        ["Online consumers", num(o.onlineConsumers) + " in " + num(o.onlineGroups) + " groups"],
        ["CommitLog", num(o.commitLog.minOffset) + " – " + num(o.commitLog.maxOffset)],
        ["ACL", o.aclEnabled ? "on (admin writes)" : "off (read-only)"],
      ]),
      el("h2", {}, "Brokers by cluster" + (cluster.nameServer ? " (name server " + cluster.nameServer + ")" : "")),
      cluster.error ? el("p", { class: "error" }, cluster.error) : table(["Cluster", "Broker", "Id", "Address"], brokers),
      el("h2", {}, "Runtime information"),
      table(["Key", "Value"], runtime.map(([k, v]) => [k, v])),
    ];
  },

  async topics(params) {
    const filter = params.get("filter") || "";
    const t = await api("topics" + (filter ? "?filter=" + encodeURIComponent(filter) : ""));
    const search = el("form", {
      onsubmit: event => {
        event.preventDefault();
        location.hash = "#/topics?" + new URLSearchParams({ filter: search.elements.filter.value });
      },
    }, field("Filter", "filter", { value: filter }), el("button", { type: "submit" }, "Filter"));
    return [
      el("h1", {}, "Topics"),
      search,
      el("p", { class: "muted" }, num(t.total) + " topics" + (t.truncated ? " (the first " + t.topics.length + " shown)" : "")),
      table(["Topic", "Read queues", "Write queues", "Perm", "Messages", "Last stored"],
        t.topics.map(x => [link("topic", { name: x.name }, x.name), x.readQueues, x.writeQueues, x.perm,
          num(x.messages), when(x.lastUpdate)]), [1, 2, 4]),
      el("h2", {}, "Create a topic"),
      writeForm("Create topic", [field("Name", "name", { required: true }), field("Queues", "queues", { type: "number", value: 8, min: 1 })],
        async (data, ak, sk) => {
          await post("topics", { name: data.name, queues: Number(data.queues) }, ak, sk);
          return "Topic " + data.name + " created.";
        }),
    ];
  },

  async topic(params) {
    const t = await api("topic?name=" + encodeURIComponent(params.get("name") || ""));
    return [
      el("h1", {}, "Topic " + t.name),
      cards([["Read queues", t.readQueues], ["Write queues", t.writeQueues], ["Perm", t.perm],
        ["Order", t.order ? "yes" : "no"], ["System", t.system ? "yes" : "no"]]),
      el("h2", {}, "Queues"),
      table(["Queue", "Min offset", "Max offset", "Messages", "Last stored"],
        t.queues.map(q => [q.queueId, num(q.minOffset), num(q.maxOffset), num(q.maxOffset - q.minOffset), when(q.lastUpdate)]), [0, 1, 2, 3]),
      el("h2", {}, "Consumer groups"),
      table(["Group"], t.groups.map(g => [link("group", { name: g }, g)])),
      el("p", {}, link("messages", { topic: t.name, queue: 0, offset: Math.max(0, (t.queues[0] || {}).minOffset || 0) }, "Browse queue 0")),
    ];
  },

  async groups(params) {
    const filter = params.get("filter") || "";
    const g = await api("groups" + (filter ? "?filter=" + encodeURIComponent(filter) : ""));
    return [
      el("h1", {}, "Consumer groups"),
      el("p", { class: "muted" }, num(g.total) + " groups" + (g.truncated ? " (the first " + g.groups.length + " shown)" : "")),
      table(["Group", "Clients", "Consume type", "Topics", "Lag"],
        g.groups.map(x => el("tr", { class: x.lag > 0 ? "lagging" : null },
          el("td", {}, link("group", { name: x.name }, x.name)), el("td", { class: "num" }, x.clients),
          el("td", {}, x.consumeType || "-"), el("td", {}, (x.topics || []).join(", ")),
          el("td", { class: "num lag" }, num(x.lag)))), [1, 4]),
    ];
  },

  async group(params) {
    const g = await api("group?name=" + encodeURIComponent(params.get("name") || ""));
    return [
      el("h1", {}, "Consumer group " + g.name),
      cards([["Online", g.online ? "yes" : "no"], ["Clients", g.clients.length], ["Total lag", num(g.lag)],
        ["Consume type", g.consumeType || "-"], ["Message model", g.messageModel || "-"]]),
      el("h2", {}, "Lag per queue"),
      table(["Topic", "Queue", "Broker offset", "Consumer offset", "Lag", "Last consumed"],
        g.queues.map(q => el("tr", { class: q.lag > 0 ? "lagging" : null },
          el("td", {}, link("topic", { name: q.topic }, q.topic)), el("td", { class: "num" }, q.queueId),
          el("td", { class: "num" }, num(q.brokerOffset)), el("td", { class: "num" }, num(q.consumerOffset)),
          el("td", { class: "num lag" }, num(q.lag)), el("td", {}, when(q.lastTimestamp)))), [1, 2, 3, 4]),
      el("h2", {}, "Connected clients"),
      table(["Client id", "Address", "Language", "Version"], g.clients.map(c => [c.clientId, c.address, c.language, c.version])),
      el("h2", {}, "Subscriptions"),
      table(["Topic", "Expression", "Type"], g.subscriptions.map(s => [s.topic, s.expression, s.type])),
      el("h2", {}, "Reset offsets"),
      writeForm("Reset offset", [
        field("Topic", "topic", { required: true, value: (g.queues[0] || {}).topic || "" }),
        field("Time (UTC, empty: the end)", "time", { type: "datetime-local" }),
      ], async (data, ak, sk) => {
        const body = { group: g.name, topic: data.topic };
        if (data.time) body.timestamp = Date.parse(data.time + "Z");
        const answer = await post("reset-offset", body, ak, sk);
        return "Reset " + answer.offsets.length + " queues: " + answer.offsets.map(o => o.queueId + "→" + o.offset).join(", ");
      }),
    ];
  },

  async messages(params) {
    const form = el("form", {
      onsubmit: event => {
        event.preventDefault();
        const data = Object.fromEntries([...new FormData(form).entries()].filter(([, v]) => v !== ""));
        location.hash = "#/messages?" + new URLSearchParams(data);
      },
    }, field("Topic", "topic", { value: params.get("topic") || "" }),
    field("Message id", "id", { value: params.get("id") || "", size: 34, style: "min-width: 300px" }),
    field("Key", "key", { value: params.get("key") || "" }),
    field("Queue", "queue", { value: params.get("queue") || "", type: "number", min: 0 }),
    field("Queue offset", "offset", { value: params.get("offset") || "", type: "number", min: 0 }),
    el("button", { type: "submit" }, "Look up"));
    const out = [el("h1", {}, "Messages"), form,
      el("p", { class: "muted" }, "By message id (an offset id alone, a unique key with its topic), by topic and key, or by topic, queue and offset.")];
    if (![...params.keys()].length) return out;
    let found;
    try {
      found = await api("messages?" + params);
    } catch (error) {
      return out.concat(el("p", { class: "error" }, error.message));
    }
    out.push(el("p", { class: "muted" }, found.messages.length + " message(s) found"));
    for (const m of found.messages) {
      out.push(el("div", { class: "message" },
        el("h2", {}, "Message " + m.msgId),
        table(["Field", "Value"], [
          ["Topic", link("topic", { name: m.topic }, m.topic)], ["Queue / offset", m.queueId + " / " + m.queueOffset],
          ["Unique key", m.uniqKey || "-"], ["Tags", m.tags || "-"], ["Keys", m.keys || "-"],
          ["Born", when(m.bornTimestamp) + " from " + m.bornHost], ["Stored", when(m.storeTimestamp) + " on " + m.storeHost],
          ["Reconsume times", m.reconsumeTimes], ["CommitLog offset", m.commitLogOffset],
          ["Properties", Object.entries(m.properties).map(([k, v]) => k + "=" + v).join("  ")],
          ["Body (" + m.bodyLength + " bytes" + (m.bodyTruncated ? ", cut" : "") + ")", el("pre", {}, m.body)],
        ]),
        el("p", {}, link("messages", { topic: m.topic, queue: m.queueId, offset: m.queueOffset + 1 }, "Next in this queue →"))));
    }
    return out;
  },

  async throughput() {
    const t = await api("throughput");
    const points = t.points;
    const canvas = el("canvas", { id: "chart", width: 1200, height: 360 });
    const last = points[points.length - 1] || { in: 0, out: 0 };
    const total = key => points.reduce((sum, p, i) => {
      const span = i ? (p.t - points[i - 1].t) / 1000 : t.periodSeconds;
      return sum + p[key] * span;
    }, 0);
    const result = [
      el("h1", {}, "Throughput over the last hour"),
      cards([["Messages in now", last.in.toFixed(1) + " /s"], ["Messages out now", last.out.toFixed(1) + " /s"],
        ["In, last hour", num(Math.round(total("in")))], ["Out, last hour", num(Math.round(total("out")))],
        ["Samples", points.length + " of " + 360]]),
      el("h2", {}, "Messages per second (" + t.periodSeconds + " s samples)"),
      el("p", { class: "legend" }, el("span", {}, el("span", { class: "swatch", style: "background:#0b63b6" }), "in (stored)"),
        el("span", {}, el("span", { class: "swatch", style: "background:#e07b00" }), "out (delivered)")),
      canvas,
    ];
    requestAnimationFrame(() => draw(canvas, points));
    setTimeout(() => draw(canvas, points), 0);
    return result;
  },
};

function draw(canvas, points) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, left = 60, right = 16, top = 14, bottom = 30;
  ctx.clearRect(0, 0, w, h);
  const now = points.length ? points[points.length - 1].t : Date.now();
  const from = now - 3600 * 1000;
  const max = Math.max(1, ...points.map(p => Math.max(p.in, p.out)));
  const x = t => left + (t - from) / 3600000 * (w - left - right);
  const y = v => h - bottom - v / max * (h - top - bottom);
  ctx.font = "12px sans-serif";
  ctx.fillStyle = "#5d6b7a";
  ctx.strokeStyle = "#e3e8ee";
  for (let i = 0; i <= 4; i++) {
    const v = max * i / 4;
    ctx.beginPath(); ctx.moveTo(left, y(v)); ctx.lineTo(w - right, y(v)); ctx.stroke();
    ctx.fillText(v >= 100 ? Math.round(v) : v >= 10 ? v.toFixed(1) : v.toFixed(2), 6, y(v) + 4);
  }
  for (let m = 0; m <= 60; m += 10) {
    const t = from + m * 60000;
    ctx.fillText(m === 60 ? "now" : "-" + (60 - m) + " min", x(t) - 16, h - 10);
  }
  for (const [key, color] of [["in", "#0b63b6"], ["out", "#e07b00"]]) {
    ctx.strokeStyle = color;
    ctx.lineWidth = 2;
    ctx.beginPath();
    points.forEach((p, i) => i ? ctx.lineTo(x(p.t), y(p[key])) : ctx.moveTo(x(p.t), y(p[key])));
    ctx.stroke();
  }
}

async function route() {
  const hash = location.hash.replace(/^#\/?/, "") || "overview";
  const [page, query] = hash.split("?");
  const params = new URLSearchParams(query || "");
  const render = pages[page] || pages.overview;
  for (const a of document.querySelectorAll("#nav a")) {
    const active = a.dataset.page === page || (a.dataset.page + "s" === page) ||
      (page === "topic" && a.dataset.page === "topics") || (page === "group" && a.dataset.page === "groups");
    a.classList.toggle("active", active);
  }
  try {
    if (!overviewCache) overviewCache = await api("overview");
    document.getElementById("mode").textContent = overviewCache.writable ? "ACL on: admin writes" : "read-only";
    const content = [await render(params)].flat();
    if (flash) content.unshift(el("p", { class: "ok" }, flash));
    flash = null;
    main.replaceChildren(...content);
  } catch (error) {
    main.replaceChildren(el("h1", {}, "Error"), el("p", { class: "error" }, error.message));
  }
  document.body.dataset.loaded = page;
}

window.addEventListener("hashchange", route);
route();
