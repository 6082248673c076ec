// The registry's web UI: plain JavaScript, no build step, no third-party code.
// It calls only the public REST API, on this origin, with the browser's credentials
// (fetch's default "same-origin"), so whatever authentication the registry asks for
// applies here unchanged. Every value from the registry reaches the page as text
// (textContent), never as HTML.
"use strict";

const MEDIA_TYPE = "application/vnd.schemaregistry.v1+json";
const PAGE_SIZE = 50;
const LEVELS = ["BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE"];
const MODES = ["READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT"];
// A line diff compares every line with every other: past this many pairs, say so instead.
const DIFF_MAX_CELLS = 4_000_000;

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const init = { method, headers: { Accept: MEDIA_TYPE } };
  if (body !== undefined) {
    init.headers["Content-Type"] = MEDIA_TYPE;
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (!response.ok) {
    const code = data && data.error_code !== undefined ? data.error_code : response.status;
    const message = data && data.message ? data.message : text.slice(0, 300) || response.statusText;
    throw new ApiError(response.status, code, message);
  }
  return data;
}

const enc = encodeURIComponent;

// ---- DOM -----------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "text") el.textContent = value;
    else el.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function show(...nodes) {
  const main = document.getElementById("main");
  main.replaceChildren(...nodes);
}

function showError(error) {
  const box = document.getElementById("error");
  if (!error) { box.hidden = true; box.textContent = ""; return; }
  box.hidden = false;
  box.textContent = error instanceof ApiError ? `Error ${error.code}: ${error.message}` : String(error);
}

function subjectLink(subject, version) {
  const href = `#/subject/${enc(subject)}` + (version !== undefined ? `/version/${version}` : "");
  return h("a", { href, text: version !== undefined ? `${subject} v${version}` : subject });
}

// ---- highlighting --------------------------------------------------------------------
// Two small tokenizers (JSON for Avro and JSON Schema, Protobuf): a highlighting
// library would have to be vendored or built, which this page avoids. Each is one
// linear pass with a sticky regular expression.

const JSON_TOKENS = /("(?:\\.|[^"\\])*")(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|\b(true|false|null)\b|([^"\d\-tfn]+|.)/gys;
const PROTO_TOKENS = /(\/\/[^\n]*|\/\*[\s\S]*?\*\/)|("(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')|\b(syntax|edition|package|import|public|weak|option|message|enum|oneof|map|repeated|optional|required|reserved|extend|extensions|service|rpc|returns|stream|to|max)\b|\b(double|float|int32|int64|uint32|uint64|sint32|sint64|fixed32|fixed64|sfixed32|sfixed64|bool|string|bytes)\b|\b(\d+)\b|([A-Za-z_][\w.]*|\s+|.)/gys;

function highlighted(text, schemaType) {
  const pre = h("pre", { class: "code" });
  const add = (cls, value) => pre.append(cls ? h("span", { class: cls, text: value }) : document.createTextNode(value));
  if (schemaType === "PROTOBUF") {
    for (const m of text.matchAll(PROTO_TOKENS)) {
      if (m[1]) add("tok-comment", m[1]);
      else if (m[2]) add("tok-string", m[2]);
      else if (m[3]) add("tok-keyword", m[3]);
      else if (m[4]) add("tok-type", m[4]);
      else if (m[5]) add("tok-number", m[5]);
      else add(null, m[6]);
    }
  } else {
    for (const m of text.matchAll(JSON_TOKENS)) {
      if (m[1]) { add(m[2] ? "tok-key" : "tok-string", m[1]); if (m[2]) add(null, m[2]); }
      else if (m[3]) add("tok-number", m[3]);
      else if (m[4]) add("tok-literal", m[4]);
      else add(null, m[5]);
    }
  }
  return pre;
}

function pretty(text, schemaType) {
  if (schemaType === "PROTOBUF") return text.replace(/\n$/, "");
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
}

// ---- diff ----------------------------------------------------------------------------
// Longest common subsequence of lines, table-driven: written here because the page
// has no dependencies; schemas are small, and DIFF_MAX_CELLS bounds the table.

function lineDiff(a, b) {
  const n = a.length, m = b.length;
  if (n * m > DIFF_MAX_CELLS) return null;
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push(["same", a[i]]); i++; j++; }
    else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push(["del", a[i++]]);
    else out.push(["add", b[j++]]);
  }
  while (i < n) out.push(["del", a[i++]]);
  while (j < m) out.push(["add", b[j++]]);
  return out;
}

// ---- views ---------------------------------------------------------------------------

const subjectsState = { prefix: "", page: 0, all: [], loadedFor: null };

async function subjectsView(query) {
  const prefix = query.get("prefix") || "";
  const page = Math.max(0, parseInt(query.get("page") || "0", 10) || 0);
  if (subjectsState.loadedFor !== prefix || !query.has("page")) {
    // One request per search (paging reuses it); the page shows PAGE_SIZE at a time.
    subjectsState.all = await api("GET", `/subjects?subjectPrefix=${enc(prefix)}`);
    subjectsState.loadedFor = prefix;
  }
  const all = subjectsState.all;
  const pages = Math.max(1, Math.ceil(all.length / PAGE_SIZE));
  const current = Math.min(page, pages - 1);
  const shown = all.slice(current * PAGE_SIZE, (current + 1) * PAGE_SIZE);
  const search = h("input", { type: "search", id: "subject-search", placeholder: "Subject prefix…", value: prefix,
                              "aria-label": "subject prefix" });
  let timer = null;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => { location.hash = `#/?prefix=${enc(search.value)}`; }, 250);
  });
  const go = (p) => `#/?prefix=${enc(prefix)}&page=${p}`;
  show(
    h("h1", { text: "Subjects" }),
    h("div", { class: "toolbar" }, search,
      h("span", { class: "muted", id: "subject-count",
                  text: `${all.length.toLocaleString()} subject${all.length === 1 ? "" : "s"}` })),
    h("table", { id: "subjects" }, h("tbody", {}, shown.map((s) => h("tr", {}, h("td", {}, subjectLink(s)))))),
    h("div", { class: "pager" },
      current > 0 ? h("a", { href: go(current - 1), id: "prev-page", text: "← previous" }) : null,
      h("span", { class: "muted", id: "page-info",
                  text: all.length ? `${(current * PAGE_SIZE + 1).toLocaleString()}–${(current * PAGE_SIZE + shown.length).toLocaleString()} of ${all.length.toLocaleString()}` : "no subjects" }),
      current < pages - 1 ? h("a", { href: go(current + 1), id: "next-page", text: "next →" }) : null),
  );
  search.focus();
  search.setSelectionRange(prefix.length, prefix.length);
}

function tabs(subject, active) {
  const base = `#/subject/${enc(subject)}`;
  const tab = (name, href, label) => h("a", { href, class: active === name ? "active" : null, id: `tab-${name}`, text: label });
  return h("div", { class: "tabs" }, tab("schema", base, "Schema"), tab("diff", `${base}/diff`, "Diff"),
           tab("check", `${base}/check`, "Compatibility"), tab("settings", `${base}/settings`, "Config & mode"));
}

async function schemaView(subject, version) {
  const versions = await api("GET", `/subjects/${enc(subject)}/versions`);
  const wanted = version || "latest";
  const body = await api("GET", `/subjects/${enc(subject)}/versions/${enc(wanted)}`);
  const type = body.schemaType || "AVRO";
  const refs = body.references || [];
  const referencedBy = h("dd", { id: "referenced-by", text: "…" });
  show(
    h("h1", { text: subject }), tabs(subject, "schema"),
    h("div", { class: "versions", id: "versions" },
      versions.map((v) => h("a", { href: `#/subject/${enc(subject)}/version/${v}`,
                                   class: v === body.version ? "active" : null, text: `v${v}` }))),
    h("dl", { class: "facts" },
      h("dt", { text: "version" }), h("dd", { id: "schema-version", text: body.version }),
      h("dt", { text: "id" }), h("dd", { id: "schema-id", text: body.id }),
      h("dt", { text: "type" }), h("dd", { text: type }),
      h("dt", { text: "references" }),
      h("dd", { id: "references" }, refs.length ? refs.map((r, i) => [i ? ", " : "", `${r.name} → `, subjectLink(r.subject, r.version)]) : "none"),
      h("dt", { text: "referenced by" }), referencedBy),
    highlighted(pretty(body.schema, type), type),
  );
  const ids = await api("GET", `/subjects/${enc(subject)}/versions/${body.version}/referencedby`);
  if (!ids.length) { referencedBy.textContent = "nothing"; return; }
  // Each referencing id names its subjects and versions; the first 50 are looked up.
  const found = await Promise.all(ids.slice(0, 50).map((id) => api("GET", `/schemas/ids/${id}/versions`)));
  referencedBy.replaceChildren(...found.flat().map((sv, i) => h("span", {}, i ? ", " : "", subjectLink(sv.subject, sv.version))),
                               ids.length > 50 ? ` and ${ids.length - 50} more ids` : "");
}

async function diffView(subject, query) {
  const versions = await api("GET", `/subjects/${enc(subject)}/versions`);
  const last = versions[versions.length - 1];
  const a = query.get("a") || String(versions.length > 1 ? versions[versions.length - 2] : last);
  const b = query.get("b") || String(last);
  const picker = (id, value) => h("select", { id }, versions.map((v) => h("option", { value: v, selected: String(v) === value, text: `v${v}` })));
  const left = picker("diff-a", a), right = picker("diff-b", b);
  const compare = () => { location.hash = `#/subject/${enc(subject)}/diff?a=${left.value}&b=${right.value}`; };
  left.addEventListener("change", compare);
  right.addEventListener("change", compare);
  const [old, neu] = await Promise.all([a, b].map((v) => api("GET", `/subjects/${enc(subject)}/versions/${enc(v)}`)));
  const oldLines = pretty(old.schema, old.schemaType || "AVRO").split("\n");
  const newLines = pretty(neu.schema, neu.schemaType || "AVRO").split("\n");
  const lines = lineDiff(oldLines, newLines);
  const changed = lines ? lines.filter(([kind]) => kind !== "same").length : null;
  show(
    h("h1", { text: subject }), tabs(subject, "diff"),
    h("div", { class: "toolbar" }, "from", left, "to", right,
      h("span", { class: "muted", id: "diff-summary",
                  text: lines === null ? "too large to compare here" : changed ? `${changed} changed line${changed === 1 ? "" : "s"}` : "no differences" })),
    lines === null ? null : h("pre", { class: "code diff", id: "diff" },
      lines.map(([kind, text]) => h("span", { class: kind, text: (kind === "add" ? "+ " : kind === "del" ? "- " : "  ") + text }))),
  );
}

async function checkView(subject) {
  const [latest, config] = await Promise.all([
    api("GET", `/subjects/${enc(subject)}/versions/latest`),
    api("GET", `/config/${enc(subject)}?defaultToGlobal=true`),
  ]);
  const versions = await api("GET", `/subjects/${enc(subject)}/versions`);
  const text = h("textarea", { id: "check-schema", spellcheck: "false", "aria-label": "schema to check" });
  text.value = pretty(latest.schema, latest.schemaType || "AVRO");
  const type = h("select", { id: "check-type" }, ["AVRO", "JSON", "PROTOBUF"].map((t) => h("option", { value: t, selected: t === (latest.schemaType || "AVRO"), text: t })));
  const against = h("select", { id: "check-against" },
    h("option", { value: "", text: "every version the level checks" }),
    versions.slice().reverse().map((v) => h("option", { value: v, text: `version ${v}` })));
  const result = h("div", { id: "check-result" });
  const run = async () => {
    result.className = "";
    result.textContent = "checking…";
    const body = { schema: text.value };
    if (type.value !== "AVRO") body.schemaType = type.value;
    if (latest.references && latest.references.length && type.value === (latest.schemaType || "AVRO")) body.references = latest.references;
    const path = `/compatibility/subjects/${enc(subject)}/versions` + (against.value ? `/${against.value}` : "") + "?verbose=true";
    try {
      const answer = await api("POST", path, body);
      result.className = "result " + (answer.is_compatible ? "compatible" : "incompatible");
      result.replaceChildren(h("strong", { text: answer.is_compatible ? "Compatible" : "Incompatible" }),
        (answer.messages || []).length ? h("ul", {}, answer.messages.map((m) => h("li", { text: typeof m === "string" ? m : JSON.stringify(m) }))) : null);
    } catch (error) {
      result.className = "result incompatible";
      result.textContent = error instanceof ApiError ? `Error ${error.code}: ${error.message}` : String(error);
    }
  };
  show(
    h("h1", { text: subject }), tabs(subject, "check"),
    h("p", {}, "Level in effect: ", h("strong", { id: "check-level", text: config.compatibilityLevel }),
      h("span", { class: "muted", text: " (change it under Config & mode)" })),
    h("div", { class: "toolbar" }, "type", type, "against", against, h("button", { id: "check-run", onclick: run, text: "Check" })),
    text, result,
  );
}

async function settingsView(subject) {
  const scope = subject ? `/${enc(subject)}` : "";
  const getOwn = async (kind) => {
    try { return await api("GET", `/${kind}${scope}`); } catch (e) { if (e.status === 404) return null; throw e; }
  };
  const [ownConfig, ownMode, effectiveConfig, effectiveMode] = await Promise.all([
    getOwn("config"), getOwn("mode"),
    api("GET", `/config${scope}${subject ? "?defaultToGlobal=true" : ""}`),
    api("GET", `/mode${scope}${subject ? "?defaultToGlobal=true" : ""}`),
  ]);
  const status = h("span", { id: "settings-status", class: "muted" });
  const row = (kind, label, options, own, effective, key) => {
    const select = h("select", { id: `${kind}-select` }, options.map((o) => h("option", { value: o, selected: o === effective, text: o })));
    const save = async () => {
      try {
        const body = kind === "config" ? { compatibility: select.value } : { mode: select.value };
        await api("PUT", `/${kind}${scope}`, body);
        status.className = "ok";
        status.textContent = `${label} set to ${select.value}`;
        await route(false);
        document.getElementById("settings-status").textContent = `${label} set to ${select.value}`;
      } catch (error) { status.className = "bad"; status.textContent = error instanceof ApiError ? `Error ${error.code}: ${error.message}` : String(error); }
    };
    const remove = async () => {
      try {
        await api("DELETE", `/${kind}${scope}`);
        await route(false);
        document.getElementById("settings-status").textContent = `${label} deleted`;
      } catch (error) { status.className = "bad"; status.textContent = error instanceof ApiError ? `Error ${error.code}: ${error.message}` : String(error); }
    };
    return [h("strong", { text: label }), select,
            h("span", { class: "muted", id: `${kind}-source`, text: own ? (subject ? "set on this subject" : "set globally") : (subject ? "inherited (global)" : "default") }),
            h("span", {}, h("button", { id: `${kind}-save`, onclick: save, text: "Save" }), " ",
              h("button", { class: "secondary", id: `${kind}-delete`, onclick: remove, disabled: !own, text: "Delete" }))];
  };
  show(
    h("h1", { text: subject || "Global settings" }), subject ? tabs(subject, "settings") : null,
    h("div", { class: "settings" },
      row("config", "Compatibility", LEVELS, ownConfig, effectiveConfig.compatibilityLevel),
      row("mode", "Mode", MODES, ownMode, effectiveMode.mode)),
    h("p", {}, status),
  );
}

async function schemaByIdView(id) {
  const [body, versions] = await Promise.all([api("GET", `/schemas/ids/${enc(id)}`), api("GET", `/schemas/ids/${enc(id)}/versions`)]);
  const type = body.schemaType || "AVRO";
  show(h("h1", { text: `Schema ${id}` }),
       h("p", {}, "Used by: ", versions.map((sv, i) => [i ? ", " : "", subjectLink(sv.subject, sv.version)])),
       highlighted(pretty(body.schema, type), type));
}

async function statusView() {
  const get = async (path) => { try { return await api("GET", path); } catch (e) { return e; } };
  const [leader, ready, cluster, version, config, mode] = await Promise.all(
    ["/leader", "/ready", "/v1/metadata/id", "/v1/metadata/version", "/config", "/mode"].map(get));
  let metrics = null;
  try {
    const response = await fetch("/metrics");
    if (response.ok) metrics = await response.text();
  } catch (e) { metrics = null; }
  const value = (v, f) => (v instanceof Error ? `unavailable (${v.code}: ${v.message})` : f(v));
  show(
    h("h1", { text: "Status" }),
    h("dl", { class: "facts", id: "status" },
      h("dt", { text: "ready" }), h("dd", { id: "status-ready", class: ready instanceof Error ? "bad" : "ok", text: value(ready, () => "yes") }),
      h("dt", { text: "leader" }), h("dd", { id: "status-leader", text: value(leader, (l) => l.leader || "none known") }),
      h("dt", { text: "this node leads" }), h("dd", { text: value(leader, (l) => (l.is_leader ? "yes" : "no")) }),
      h("dt", { text: "leader problem" }), h("dd", { text: value(leader, (l) => l.problem || "none") }),
      h("dt", { text: "appends accepted" }), h("dd", { text: value(leader, (l) => String(l.accepted_appends)) }),
      h("dt", { text: "cluster" }), h("dd", { text: value(cluster, (c) => JSON.stringify(c.scope.clusters)) }),
      h("dt", { text: "version" }), h("dd", { text: value(version, (v) => v.version) }),
      h("dt", { text: "global compatibility" }), h("dd", { text: value(config, (c) => c.compatibilityLevel) }),
      h("dt", { text: "global mode" }), h("dd", { text: value(mode, (m) => m.mode) })),
    h("p", {}, h("a", { href: "#/settings", id: "global-settings", text: "Edit global config and mode" })),
    h("h2", { text: "Metrics" }),
    metrics ? h("pre", { class: "code", id: "metrics", text: metrics.slice(0, 20000) })
            : h("p", { class: "muted", id: "metrics", text: "This registry serves no /metrics." }),
  );
}

// ---- routing -------------------------------------------------------------------------

async function route(clearError = true) {
  if (clearError) showError(null);
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, queryText] = hash.split("?", 2);
  const query = new URLSearchParams(queryText || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  document.getElementById("nav-status").classList.toggle("active", parts[0] === "status");
  try {
    if (parts.length === 0) await subjectsView(query);
    else if (parts[0] === "status") await statusView();
    else if (parts[0] === "settings") await settingsView(null);
    else if (parts[0] === "schema" && parts[1]) await schemaByIdView(parts[1]);
    else if (parts[0] === "subject" && parts[1]) {
      const subject = parts[1];
      if (parts[2] === "version") await schemaView(subject, parts[3]);
      else if (parts[2] === "diff") await diffView(subject, query);
      else if (parts[2] === "check") await checkView(subject);
      else if (parts[2] === "settings") await settingsView(subject);
      else await schemaView(subject, null);
    } else show(h("p", { text: "Nothing here." }));
  } catch (error) {
    showError(error);
    if (!document.getElementById("main").childElementCount) show(h("p", { class: "muted", text: "—" }));
  }
}

window.addEventListener("hashchange", () => route());
window.addEventListener("DOMContentLoaded", () => route());
