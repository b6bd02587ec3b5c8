// Hayakoe web page: voices, try it, how it will be read, dictionary, status.
// Plain JavaScript, no build step, nothing from elsewhere. Every URL is relative, so the
// page works at / and under Home Assistant's ingress path.
"use strict";

const STRINGS = {
  en: {
    tab_voices: "Voices", tab_try: "Try it", tab_dictionary: "Dictionary", tab_status: "Status",
    voices_hint: "Every voice, style and preset this server speaks. Press ▶ to hear a short sample.",
    text_label: "Text", voice_label: "Voice", style_label: "Style",
    speed: "Speed", pitch: "Pitch", intonation: "Intonation", volume: "Volume",
    speak: "▶ Speak", download: "⤓ WAV", stop: "■ Stop",
    reading_title: "How it will be read",
    reading_hint: "The text after rewriting (numbers, units, English words), then each accent phrase in katakana with its pitch: the line falls after the accented mora.",
    rewritten: "Rewritten",
    dict_add: "Add a word", dict_edit: "Edit a word",
    surface: "Word (as written)", reading: "Reading (katakana)", priority: "Priority",
    accent: "Accent: click the mora after which the pitch falls",
    flat: "Flat", auto: "Auto", save: "Save", listen: "▶ Listen", cancel: "Cancel",
    dict_words: "Words", import: "Import CSV", export: "Export CSV",
    surface_short: "Word", reading_short: "Reading", accent_short: "Accent", priority_short: "Priority",
    dict_empty: "No words yet.", edit: "Edit", delete: "Delete",
    readonly: "read-only", from_file: "from",
    dict_file: "Saved to {file}; the next request reads it.",
    dict_none: "No dictionary file is configured (--http-dict): words cannot be saved here.",
    warnings: "Last warnings", no_warnings: "No warnings.",
    first_audio: "first audio {ms} ms", rtf: "RTF {rtf}", seconds: "{s} s of audio",
    sample_rate: "Sample rate", precision: "Precision", license: "License / attribution",
    styles: "Styles", presets: "Presets", preset: "preset", preset_of: "preset of {voice}",
    version: "Version", uptime: "Up for", memory: "Memory (RSS)", requests: "Requests served",
    queue: "In flight / queue limit", voices: "Voices", draining: "Shutting down",
    accent_auto: "auto", accent_flat: "flat (0)", accent_n: "falls after mora {n}",
    need_reading: "Type the reading first",
    reading_kana: "reading: katakana or hiragana only",
    saved: "Saved “{surface}”.", deleted: "Deleted “{surface}”.",
    imported: "Imported {n} word(s).", import_failed: "Nothing imported: fix these lines.",
    line: "line {n}", confirm_delete: "Delete “{surface}”?",
    error: "Error", default: "default", read_now: "read now: {reading}", measured_rtf: "RTF measured here",
  },
  ja: {
    tab_voices: "ボイス", tab_try: "試す", tab_dictionary: "辞書", tab_status: "状態",
    voices_hint: "このサーバーが話せる声・スタイル・プリセットの一覧です。▶ で短いサンプルを再生します。",
    text_label: "テキスト", voice_label: "声", style_label: "スタイル",
    speed: "話速", pitch: "音高", intonation: "抑揚", volume: "音量",
    speak: "▶ 再生", download: "⤓ WAV", stop: "■ 停止",
    reading_title: "読み方",
    reading_hint: "書き換え後のテキスト（数字・単位・英単語）と、アクセント句ごとのカタカナ読み。線はアクセントのあるモーラの後で下がります。",
    rewritten: "書き換え後",
    dict_add: "単語を追加", dict_edit: "単語を編集",
    surface: "単語（表記）", reading: "読み（カタカナ）", priority: "優先度",
    accent: "アクセント：音が下がる直前のモーラをクリック",
    flat: "平板", auto: "自動", save: "保存", listen: "▶ 試聴", cancel: "キャンセル",
    dict_words: "単語", import: "CSV 読み込み", export: "CSV 書き出し",
    surface_short: "表記", reading_short: "読み", accent_short: "アクセント", priority_short: "優先度",
    dict_empty: "まだ単語がありません。", edit: "編集", delete: "削除",
    readonly: "読み取り専用", from_file: "出典",
    dict_file: "{file} に保存し、次のリクエストから使われます。",
    dict_none: "辞書ファイルが設定されていません（--http-dict）。ここでは保存できません。",
    warnings: "最近の警告", no_warnings: "警告はありません。",
    first_audio: "最初の音声 {ms} ms", rtf: "RTF {rtf}", seconds: "音声 {s} 秒",
    sample_rate: "サンプリング周波数", precision: "精度", license: "ライセンス・クレジット",
    styles: "スタイル", presets: "プリセット", preset: "プリセット", preset_of: "{voice} のプリセット",
    version: "バージョン", uptime: "稼働時間", memory: "メモリ (RSS)", requests: "処理したリクエスト",
    queue: "処理中 / 待ち行列の上限", voices: "声", draining: "停止中",
    accent_auto: "自動", accent_flat: "平板 (0)", accent_n: "{n} モーラ目の後で下がる",
    need_reading: "先に読みを入力してください",
    reading_kana: "読み：カタカナかひらがなで入力してください",
    saved: "「{surface}」を保存しました。", deleted: "「{surface}」を削除しました。",
    imported: "{n} 語を読み込みました。", import_failed: "読み込んでいません。次の行を直してください。",
    line: "{n} 行目", confirm_delete: "「{surface}」を削除しますか？",
    error: "エラー", default: "既定", read_now: "現在の読み：{reading}", measured_rtf: "この機器での RTF",
  },
};

// the browser's language; ?lang=ja or ?lang=en overrides it
const LANG = (() => {
  const asked = new URLSearchParams(location.search).get("lang");
  if (asked === "ja" || asked === "en") return asked;
  const first = (navigator.languages || [navigator.language || "en"])[0] || "en";
  return /^ja\b/i.test(first) ? "ja" : "en";
})();

function t(key, vars) {
  let s = (STRINGS[LANG] && STRINGS[LANG][key]) || STRINGS.en[key] || key;
  for (const [k, v] of Object.entries(vars || {})) s = s.split(`{${k}}`).join(String(v));
  return s;
}

const $ = (sel) => document.querySelector(sel);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k.startsWith("data_")) node.dataset[k.slice(5)] = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

async function api(path, options) {
  const res = await fetch(path, Object.assign({ credentials: "same-origin" }, options || {}));
  let data = null;
  const type = res.headers.get("Content-Type") || "";
  if (type.includes("json")) data = await res.json();
  if (!res.ok) {
    const err = new Error((data && data.error) || `${res.status} ${res.statusText}`);
    err.status = res.status;
    err.data = data;
    throw err;
  }
  return data;
}

function postJSON(path, body) {
  return api(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
}

// -- morae and pitch ---------------------------------------------------------------------

const SMALL = new Set("ァィゥェォャュョヮ");

function toKatakana(s) {
  return s.replace(/[\u3041-\u3096]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0x60));
}

function splitMorae(reading) {
  const morae = [];
  for (const c of toKatakana(reading.normalize("NFKC")).replace(/\s/g, "")) {
    if (SMALL.has(c) && morae.length) morae[morae.length - 1] += c;
    else morae.push(c);
  }
  return morae;
}

function pitchPattern(n, accent) {
  if (n <= 0) return [];
  if (accent === 1) return Array.from({ length: n }, (_, i) => i === 0);
  const end = accent <= 0 || accent > n ? n : accent;
  return Array.from({ length: n }, (_, i) => i > 0 && i < end);
}

const CELL = 34;

// Morae in cells with a pitch line over them (as VOICEVOX draws it); `onPick(i)` makes the
// cells buttons (the dictionary's accent picker).
function moraeWithPitch(morae, pitches, onPick, accent, small) {
  const box = el("div", { class: "mora-box" + (small ? " small" : "") });
  const cell = small ? 22 : CELL;
  const height = small ? 16 : 26;
  const width = morae.length * cell;
  const line = svg("svg", { class: "pitch", width, height, viewBox: `0 0 ${width} ${height}` });
  if (pitches && pitches.length) {
    const pts = pitches.map((h, i) => [i * cell + cell / 2, h ? 4 : height - 5]);
    line.append(svg("polyline", { points: pts.map((p) => p.join(",")).join(" ") }));
    for (const [x, y] of pts) line.append(svg("circle", { cx: x, cy: y, r: small ? 2.4 : 3.2 }));
  }
  box.append(line);
  const row = el("div", { class: "morae" });
  morae.forEach((m, i) => {
    const attrs = { class: "mora" + (accent === i + 1 ? " accented" : ""), text: m };
    if (onPick) {
      row.append(el("button", Object.assign(attrs, {
        type: "button", title: t("accent_n", { n: i + 1 }), data_index: String(i + 1),
        onclick: () => onPick(i + 1),
      })));
    } else {
      row.append(el("span", attrs));
    }
  });
  box.append(row);
  return box;
}

// -- tabs --------------------------------------------------------------------------------

const loaders = {};

function show(view) {
  for (const tab of document.querySelectorAll("#tabs button")) {
    const on = tab.dataset.view === view;
    tab.setAttribute("aria-selected", on ? "true" : "false");
    tab.classList.toggle("active", on);
  }
  for (const section of document.querySelectorAll(".view")) {
    section.hidden = section.id !== `view-${view}`;
  }
  if (location.hash !== `#${view}`) history.replaceState(null, "", `#${view}`);
  if (loaders[view]) loaders[view]();
}

function globalError(err) {
  const banner = $("#global-error");
  banner.textContent = `${t("error")}: ${err.message || err}`;
  banner.hidden = false;
}

// -- voices ------------------------------------------------------------------------------

let VOICES = null;

async function loadVoices() {
  if (!VOICES) VOICES = await api("api/voices");
  return VOICES;
}

function precisionText(p) {
  if (p === null || p === undefined) return null;
  if (typeof p !== "object") return String(p);
  const parts = [];
  for (const [k, v] of Object.entries(p)) {
    if (v === null || v === undefined || typeof v === "object") continue;
    parts.push(k === "name" || k === "kind" || k === "precision" ? String(v) : `${k} ${v}`);
  }
  return parts.join(" · ");
}

function playSample(button, voice, style) {
  const player = $("#sample-player");
  for (const b of document.querySelectorAll(".play.playing")) b.classList.remove("playing");
  button.classList.add("playing");
  const params = new URLSearchParams({ voice });
  if (style) params.set("style", style);
  player.src = `api/sample?${params}`;
  player.onended = () => button.classList.remove("playing");
  player.onerror = () => {
    button.classList.remove("playing");
    globalError(new Error(`sample ${voice}${style ? ":" + style : ""}`));
  };
  player.play().catch(() => button.classList.remove("playing"));
}

async function renderVoices() {
  const data = await loadVoices();
  const list = $("#voice-list");
  list.replaceChildren();
  for (const v of data.voices) {
    const styles = el("div", { class: "styles" });
    for (const style of v.styles) {
      const b = el("button", {
        class: "play", title: `${v.name}:${style}`, data_voice: v.name, data_style: style,
        "aria-label": `▶ ${v.name} ${style}`,
      }, el("span", { class: "icon", text: "▶" }), " ", style);
      b.addEventListener("click", () => playSample(b, v.name, style));
      styles.append(b);
    }
    const facts = el("dl", { class: "facts" },
      el("dt", { text: t("sample_rate") }), el("dd", { text: `${v.sample_rate} Hz` }));
    const precision = v.runs || precisionText(v.precision);
    if (precision) facts.append(el("dt", { text: t("precision") }), el("dd", { text: precision, title: v.precision_reason || "" }));
    if (v.real_time_factor !== null && v.real_time_factor !== undefined) {
      facts.append(el("dt", { text: t("measured_rtf") }), el("dd", { text: v.real_time_factor.toFixed(2) }));
    }
    const attribution = v.attribution && v.attribution.url
      ? el("a", { href: v.attribution.url, target: "_blank", rel: "noopener noreferrer", text: v.attribution.name || v.attribution.url })
      : el("span", { text: (v.attribution && v.attribution.name) || "" });
    facts.append(el("dt", { text: t("license") }), el("dd", {}, attribution));
    list.append(el("article", { class: "card voice", data_voice: v.name },
      el("h2", {}, v.name, v.name === data.default_voice ? el("span", { class: "tag", text: t("default") }) : null),
      el("p", { class: "description", text: v.description }),
      facts,
      el("h3", { text: t("styles") }),
      styles));
  }
  for (const p of data.presets) {
    const b = el("button", { class: "play", data_voice: p.name, "aria-label": `▶ ${p.name}` },
      el("span", { class: "icon", text: "▶" }), " ", p.name);
    b.addEventListener("click", () => playSample(b, p.name, null));
    list.append(el("article", { class: "card voice preset", data_voice: p.name },
      el("h2", {}, p.name, el("span", { class: "tag", text: t("preset") })),
      el("p", { class: "description", text: p.description || t("preset_of", { voice: `${p.voice}:${p.style}` }) }),
      el("div", { class: "styles" }, b)));
  }
}
loaders.voices = () => renderVoices().catch(globalError);

// -- try it ------------------------------------------------------------------------------

let audioCtx = null;
let speaking = null;

function speakParams(format) {
  const voice = $("#voice").value;
  const body = { text: $("#text").value, voice, format };
  const style = $("#style").value;
  if (style) body.style = style;
  for (const name of ["speed", "pitch", "intonation", "volume"]) body[name] = Number($(`#${name}`).value);
  return body;
}

function fillStyles() {
  const data = VOICES;
  const select = $("#style");
  const voice = data.voices.find((v) => v.name === $("#voice").value);
  select.replaceChildren();
  if (!voice) {
    select.append(el("option", { value: "", text: "—" }));
    select.disabled = true;
    return;
  }
  select.disabled = false;
  for (const s of voice.styles) {
    select.append(el("option", { value: s, text: s, selected: s === voice.default_style }));
  }
}

async function setupTry() {
  const data = await loadVoices();
  const select = $("#voice");
  if (select.options.length) return;
  const voices = el("optgroup", { label: t("voices") });
  for (const v of data.voices) voices.append(el("option", { value: v.name, text: v.name, selected: v.name === data.default_voice }));
  select.append(voices);
  if (data.presets.length) {
    const presets = el("optgroup", { label: t("presets") });
    for (const p of data.presets) presets.append(el("option", { value: p.name, text: p.name }));
    select.append(presets);
  }
  fillStyles();
  if (!$("#text").value) $("#text").value = LANG === "ja"
    ? "明日の朝7時に、リビングの照明をつけます。"
    : "明日の朝7時に、リビングの照明をつけます。";
  updateReading();
}
loaders.try = () => setupTry().catch(globalError);

function stopSpeaking() {
  if (speaking) {
    speaking.abort.abort();
    for (const s of speaking.sources) { try { s.stop(); } catch (e) { /* not started */ } }
    speaking = null;
  }
  $("#speak").textContent = t("speak");
}

async function speak() {
  if (speaking) { stopSpeaking(); return; }
  const err = $("#speak-error");
  err.hidden = true;
  const stats = $("#speak-stats");
  stats.textContent = "…";
  delete stats.dataset.samples;
  if (!audioCtx) audioCtx = new (window.AudioContext || window.webkitAudioContext)();
  await audioCtx.resume();
  const ctx = audioCtx;
  const run = { abort: new AbortController(), sources: [] };
  speaking = run;
  $("#speak").textContent = t("stop");
  const t0 = performance.now();
  let first = null;
  let samples = 0;
  try {
    const res = await fetch("api/speak", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(speakParams("pcm")),
      signal: run.abort.signal,
      credentials: "same-origin",
    });
    if (!res.ok) {
      const data = await res.json().catch(() => ({}));
      throw new Error(data.error || `${res.status}`);
    }
    const rate = Number(res.headers.get("X-Sample-Rate"));
    const reader = res.body.getReader();
    let carry = new Uint8Array(0);
    let playAt = 0;
    let lastEnd = null;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const bytes = new Uint8Array(carry.length + value.length);
      bytes.set(carry);
      bytes.set(value, carry.length);
      const n = bytes.length >> 1;
      carry = bytes.slice(n * 2);
      if (!n) continue;
      const view = new DataView(bytes.buffer, bytes.byteOffset, n * 2);
      const f32 = new Float32Array(n);
      for (let i = 0; i < n; i++) f32[i] = view.getInt16(i * 2, true) / 32768;
      const buffer = ctx.createBuffer(1, n, rate);
      buffer.copyToChannel(f32, 0);
      const source = ctx.createBufferSource();
      source.buffer = buffer;
      source.connect(ctx.destination);
      if (playAt < ctx.currentTime) playAt = ctx.currentTime + 0.03;
      source.start(playAt);
      playAt += buffer.duration;
      run.sources.push(source);
      lastEnd = source;
      if (first === null) first = performance.now() - t0;
      samples += n;
    }
    const total = (performance.now() - t0) / 1000;
    const seconds = samples / rate;
    const parts = [];
    if (first !== null) parts.push(t("first_audio", { ms: Math.round(first) }));
    if (seconds > 0) parts.push(t("rtf", { rtf: (total / seconds).toFixed(2) }));
    parts.push(t("seconds", { s: seconds.toFixed(2) }));
    stats.textContent = parts.join(" · ");
    stats.dataset.samples = String(samples);
    stats.dataset.firstAudioMs = String(Math.round(first || 0));
    if (lastEnd) lastEnd.onended = () => { if (speaking === run) stopSpeaking(); };
    else stopSpeaking();
  } catch (e) {
    if (e.name !== "AbortError") {
      err.textContent = e.message;
      err.hidden = false;
    }
    stats.textContent = "";
    if (speaking === run) stopSpeaking();
  }
}

async function download() {
  const button = $("#download");
  button.disabled = true;
  try {
    const res = await fetch("api/speak", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(speakParams("wav")),
      credentials: "same-origin",
    });
    if (!res.ok) {
      const data = await res.json().catch(() => ({}));
      throw new Error(data.error || `${res.status}`);
    }
    const url = URL.createObjectURL(await res.blob());
    const a = el("a", { href: url, download: "hayakoe.wav" });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) {
    $("#speak-error").textContent = e.message;
    $("#speak-error").hidden = false;
  } finally {
    button.disabled = false;
  }
}

let readingTimer = null;
let readingSerial = 0;

function updateReading() {
  clearTimeout(readingTimer);
  readingTimer = setTimeout(renderReading, 300);
}

async function renderReading() {
  const text = $("#text").value;
  const serial = ++readingSerial;
  const box = $("#phrases");
  if (!text.trim()) {
    box.replaceChildren();
    $("#rewritten").textContent = "";
    return;
  }
  try {
    const data = await postJSON("api/reading", { text });
    if (serial !== readingSerial) return;
    $("#rewritten").textContent = data.rewritten;
    box.replaceChildren();
    for (const p of data.phrases) {
      const phrase = el("div", { class: "phrase" + (p.question ? " question" : "") });
      phrase.append(moraeWithPitch(p.morae, p.pitches, null, p.accent));
      box.append(phrase);
      if (p.pause_after) box.append(el("span", { class: "pause", text: "、", title: "pause" }));
    }
    box.dataset.reading = data.phrases.map((p) => p.morae.join("")).join(" ");
  } catch (e) {
    if (serial === readingSerial) box.replaceChildren(el("p", { class: "error", text: e.message }));
  }
}

// -- dictionary --------------------------------------------------------------------------

const form = { original: null, accent: null, before: "" };

// what the surface reads as now (before the word is saved), and after saving
let nowTimer = null;
async function readingOf(text) {
  const data = await postJSON("api/reading", { text });
  return data.phrases.map((p) => p.morae.join("")).join(" ");
}

function updateNow() {
  clearTimeout(nowTimer);
  nowTimer = setTimeout(async () => {
    const surface = $("#dict-surface").value.trim();
    const node = $("#dict-now");
    if (!surface) { node.textContent = ""; form.before = ""; return; }
    try {
      form.before = await readingOf(surface);
      if ($("#dict-surface").value.trim() === surface) node.textContent = t("read_now", { reading: form.before });
    } catch (e) { node.textContent = ""; }
  }, 300);
}

function clearErrors() {
  for (const node of document.querySelectorAll(".field-error, #err-entry")) node.textContent = "";
}

function showFieldError(field, message) {
  const target = $(`#err-${field}`) || $("#err-entry");
  target.textContent = message;
}

function renderAccentPicker() {
  const picker = $("#dict-accent-picker");
  const morae = splitMorae($("#dict-reading").value);
  picker.replaceChildren();
  const label = $("#dict-accent-value");
  if (!morae.length) {
    picker.append(el("span", { class: "hint", text: t("need_reading") }));
    label.textContent = "";
    return;
  }
  const accent = form.accent;
  const pitches = accent === null ? null : pitchPattern(morae.length, accent === 0 ? morae.length : accent);
  picker.append(moraeWithPitch(morae, pitches, (i) => { form.accent = i; renderAccentPicker(); }, accent));
  label.textContent = accent === null ? t("accent_auto") : accent === 0 ? t("accent_flat") : t("accent_n", { n: accent });
  label.dataset.accent = accent === null ? "" : String(accent);
}

function resetForm() {
  form.original = null;
  form.accent = null;
  $("#dict-surface").value = "";
  $("#dict-reading").value = "";
  $("#dict-priority").value = "5";
  $("#dict-now").textContent = "";
  form.before = "";
  $("#dict-form-title").textContent = t("dict_add");
  $("#dict-preview").textContent = "";
  clearErrors();
  renderAccentPicker();
}

function editWord(w) {
  form.original = w.surface;
  form.accent = w.accent;
  $("#dict-surface").value = w.surface;
  $("#dict-reading").value = w.reading;
  $("#dict-priority").value = String(w.priority);
  $("#dict-form-title").textContent = t("dict_edit");
  updateNow();
  clearErrors();
  renderAccentPicker();
  $("#dict-form-card").scrollIntoView({ behavior: "smooth", block: "start" });
}

function accentCell(w) {
  if (w.accent === null || w.accent === undefined) return el("span", { class: "hint", text: t("accent_auto") });
  const morae = splitMorae(w.reading);
  const pitches = pitchPattern(morae.length, w.accent === 0 ? morae.length : w.accent);
  return moraeWithPitch(morae, pitches, null, w.accent, true);
}

function renderDictionary(data) {
  const body = $("#dict-table tbody");
  body.replaceChildren();
  $("#dict-file").textContent = data.editable ? t("dict_file", { file: data.file }) : t("dict_none");
  $("#dict-save").disabled = !data.editable;
  $("#dict-import").disabled = !data.editable;
  for (const w of data.words) {
    body.append(el("tr", { data_surface: w.surface },
      el("td", { class: "surface", text: w.surface }),
      el("td", { class: "reading", text: w.reading }),
      el("td", {}, accentCell(w)),
      el("td", { text: String(w.priority) }),
      el("td", { class: "row-actions" },
        el("button", { class: "small", text: t("edit"), onclick: () => editWord(w) }),
        el("button", { class: "small danger", text: t("delete"), onclick: () => deleteWord(w) }))));
  }
  for (const w of data.readonly) {
    body.append(el("tr", { class: "readonly", data_surface: w.surface },
      el("td", { class: "surface" }, w.surface, " ",
        el("span", { class: "tag", title: `${t("from_file")} ${w.source}`, text: `${t("readonly")} · ${w.source}` })),
      el("td", { class: "reading", text: w.reading }),
      el("td", {}, accentCell(w)),
      el("td", { text: String(w.priority) }),
      el("td", {})));
  }
  $("#dict-empty").hidden = data.words.length + data.readonly.length > 0;
}

async function loadDictionary() {
  renderDictionary(await api("api/dictionary"));
}
loaders.dictionary = () => { renderAccentPicker(); loadDictionary().catch(globalError); };

async function saveWord() {
  clearErrors();
  const reading = $("#dict-reading").value.trim();
  if (reading && !/^[\u30a1-\u30fc\u3041-\u3096ー]+$/.test(toKatakana(reading.normalize("NFKC")))) {
    showFieldError("reading", t("reading_kana"));
    return;
  }
  const body = {
    surface: $("#dict-surface").value.trim(),
    reading,
    accent: form.accent,
    priority: $("#dict-priority").value === "" ? 5 : Number($("#dict-priority").value),
  };
  if (form.original) body.original = form.original;
  try {
    const before = form.before;
    const data = await postJSON("api/dictionary", body);
    renderDictionary(data);
    const surface = data.word.surface;
    resetForm();
    const after = await readingOf(surface).catch(() => "");
    const preview = $("#dict-preview");
    preview.textContent = t("saved", { surface }) + (after ? ` ${before ? `${before} → ` : ""}${after}` : "");
    preview.dataset.after = after;
    updateReading();
  } catch (e) {
    showFieldError((e.data && e.data.field) || "entry", e.message);
  }
}

async function deleteWord(w) {
  if (!window.confirm(t("confirm_delete", { surface: w.surface }))) return;
  try {
    renderDictionary(await postJSON("api/dictionary/delete", { surface: w.surface }));
    $("#dict-preview").textContent = t("deleted", { surface: w.surface });
    updateReading();
  } catch (e) {
    globalError(e);
  }
}

async function listenWord() {
  const surface = $("#dict-surface").value.trim();
  if (!surface) return;
  const data = await postJSON("api/reading", { text: surface }).catch(() => null);
  if (data) $("#dict-preview").textContent = data.phrases.map((p) => p.morae.join("")).join(" ");
  const prev = $("#text").value;
  $("#text").value = surface;
  await setupTry().catch(() => null);
  await speak();
  $("#text").value = prev;
}

async function importCsv(file) {
  const result = $("#import-result");
  result.replaceChildren();
  const text = await file.text();
  try {
    const data = await api("api/dictionary/import", {
      method: "POST",
      headers: { "Content-Type": "text/csv" },
      body: text,
    });
    renderDictionary(data);
    result.append(el("p", { class: "ok", text: t("imported", { n: data.imported }) }));
    updateReading();
  } catch (e) {
    const lines = (e.data && e.data.lines) || [];
    const list = el("ul", { class: "import-errors" });
    for (const l of lines) {
      list.append(el("li", { data_line: String(l.line) },
        el("strong", { text: l.line ? t("line", { n: l.line }) : "" }), " ", l.message));
    }
    result.append(el("p", { class: "error", text: lines.length ? t("import_failed") : e.message }), list);
  } finally {
    $("#dict-import").value = "";
  }
}

// -- status ------------------------------------------------------------------------------

function formatBytes(n) {
  if (!n) return "—";
  return n > 1 << 30 ? `${(n / (1 << 30)).toFixed(2)} GiB` : `${Math.round(n / (1 << 20))} MiB`;
}

function formatDuration(s) {
  const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
  return d ? `${d}d ${h}h` : h ? `${h}h ${m}m` : `${m}m ${Math.floor(s % 60)}s`;
}

async function renderStatus() {
  const s = await api("api/status");
  const list = $("#status-list");
  list.replaceChildren();
  const row = (k, v) => list.append(el("dt", { text: k }), el("dd", { text: v }));
  row(t("version"), s.version);
  row(t("uptime"), formatDuration(s.uptime_s));
  row(t("memory"), formatBytes(s.memory.rss_bytes));
  row(t("requests"), String(s.requests));
  row(t("queue"), `${s.in_flight} / ${s.max_queue}${s.draining ? ` (${t("draining")})` : ""}`);
  row(t("voices"), s.voices.map((v) => {
    const p = v.runs || precisionText(v.precision);
    const rtf = v.real_time_factor !== null && v.real_time_factor !== undefined ? `RTF ${v.real_time_factor.toFixed(2)}` : "";
    const notes = [p, rtf].filter(Boolean).join(", ");
    return `${v.name}${notes ? ` (${notes})` : ""}${v.in_flight ? ` ×${v.in_flight}` : ""}`;
  }).join(", "));
  for (const v of s.voices) {  // why each voice runs what it runs (gate figures, measured times)
    if (v.precision_reason) row(`${v.name}: ${t("precision")}`, v.precision_reason);
  }
  const warnings = $("#warnings");
  warnings.replaceChildren();
  if (!s.warnings.length) warnings.append(el("li", { class: "hint", text: t("no_warnings") }));
  for (const w of s.warnings) {
    warnings.append(el("li", {}, el("time", { text: w.time }), " ",
      el("span", { class: `tag ${w.level.toLowerCase()}`, text: w.level }), " ",
      el("code", { text: w.logger }), " ", w.message));
  }
}
loaders.status = () => renderStatus().catch(globalError);

// -- start -------------------------------------------------------------------------------

function start() {
  document.documentElement.lang = LANG;
  for (const node of document.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n);
  document.title = LANG === "ja" ? "Hayakoe — 音声" : "Hayakoe — voices";
  for (const tab of document.querySelectorAll("#tabs button")) {
    tab.addEventListener("click", () => show(tab.dataset.view));
  }
  for (const name of ["speed", "pitch", "intonation", "volume"]) {
    const input = $(`#${name}`);
    const out = $(`#${name}-out`);
    input.addEventListener("input", () => { out.textContent = Number(input.value).toFixed(2); });
  }
  $("#voice").addEventListener("change", fillStyles);
  $("#text").addEventListener("input", updateReading);
  $("#speak").addEventListener("click", speak);
  $("#download").addEventListener("click", download);
  $("#dict-reading").addEventListener("input", () => {
    const n = splitMorae($("#dict-reading").value).length;
    if (form.accent !== null && form.accent > n) form.accent = null;
    renderAccentPicker();
  });
  $("#dict-accent-flat").addEventListener("click", () => { form.accent = 0; renderAccentPicker(); });
  $("#dict-accent-auto").addEventListener("click", () => { form.accent = null; renderAccentPicker(); });
  $("#dict-surface").addEventListener("input", updateNow);
  $("#dict-save").addEventListener("click", saveWord);
  $("#dict-cancel").addEventListener("click", resetForm);
  $("#dict-listen").addEventListener("click", () => listenWord().catch(globalError));
  $("#dict-import").addEventListener("change", (e) => { if (e.target.files[0]) importCsv(e.target.files[0]); });
  const view = (location.hash || "#voices").slice(1);
  show(["voices", "try", "dictionary", "status"].includes(view) ? view : "voices");
  // the voices are needed by "Try it" too
  setupTry().catch(globalError);
}

document.addEventListener("DOMContentLoaded", start);
