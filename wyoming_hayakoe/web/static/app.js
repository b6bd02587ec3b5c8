// Hayakoe web page: voices, try it, how it will be read, dictionary, library, status.
// Plain JavaScript, no build step, nothing from elsewhere. Every URL is relative, so the
// page works at / and under Home Assistant's ingress path.
"use strict";

const STRINGS = {
  en: {
    tab_voices: "Voices", tab_try: "Try it", tab_dictionary: "Dictionary", tab_library: "Library", tab_status: "Status",
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
    style_ids: "Style IDs (engine API)", copy: "Copy", copied: "Copied", selected: "Selected",
    copy_id: "Copy the style ID of {style}", copy_url: "Copy the address",
    copy_hint: "Press Ctrl+C (⌘C), or hold and copy: over plain http the browser does not let the page copy.",
    engine_api: "Engine API", off: "off", api_voicevox: "VOICEVOX / AivisSpeech", api_openai: "OpenAI base_url",
    engine_api_voices: "Clients name a style by its ID below; OpenAI's voice is a voice's name, or name:style.",
    engine_api_local: "Reachable from the server's own machine only (`--engine-api-host` with a token opens it to others).",
    engine_api_token: "Clients send the token: `Authorization: Bearer TOKEN`.",
    openai_voices: "OpenAI's voice names speak with", openai_voices_hint: "Set one with `--openai-voice alloy=VOICE` (the add-on: `openai_voices`).",
    engine_api_off: "The engine API (VOICEVOX / AivisSpeech and OpenAI speech) is off. The style IDs below are the ones it will serve: start the server with `--engine-api-port 10101` (the add-on: set `engine_api_token`).",
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
    lib_install: "Install a voice",
    lib_install_hint: "Paste an AivisHub page or model UUID, an official voice's name or an hf:// repository, or upload an .aivmx / .aivm file. The voice is served (and listed to Home Assistant) as soon as it is ready: no restart.",
    lib_source: "AivisHub link, UUID, voice name or hf://", lib_name: "Name (optional)",
    lib_install_button: "Install", lib_upload: "Upload .aivmx / .aivm",
    lib_official: "Official hayakoe voices", lib_jobs: "Installs", lib_installed: "Voices",
    lib_voice: "Voice", lib_version: "Version", lib_size: "Size", lib_license: "License",
    lib_from: "From", lib_int8: "int8",
    lib_configured: "configured", lib_configured_hint: "Given by flags or the add-on's options: change the configuration to remove it.",
    lib_flags: "flags / options", lib_uploaded: "uploaded",
    lib_update: "Update", lib_remove: "Remove", lib_have: "installed",
    lib_install_named: "Install {name}", lib_need_source: "Paste an AivisHub link, a UUID, a voice name or an hf:// address first.",
    lib_confirm_remove: "Remove {name}? Its files go too.",
    lib_upload_failed: "{file}: the upload did not reach the server.",
    job_uploading: "Uploading", job_queued: "Queued", job_downloading: "Downloading",
    job_checking: "Checking", job_converting: "Converting", job_loading: "Loading",
    job_ready: "Ready", job_failed: "Failed", job_cancelled: "Cancelled",
    int8_queued: "waiting", int8_making: "making", int8_switching: "switching",
    int8_int8: "int8", int8_fp32: "fp32", int8_bf16: "bf16", int8_fp16: "fp16",
    int8_failed: "failed", int8_cancelled: "cancelled",
    job_contacting: "Contacting AivisHub",
    lib_dismiss: "Dismiss", lib_details: "Details", lib_license_more: "Full license",
    // an API error's words by its `code` (`err_<code>_<field>` first); an unknown code shows the
    // server's own sentence
    err_bad_json: "The request was not valid JSON.",
    err_bad_request: "The request was not valid.",
    err_too_large: "Too large: over the server's limit.",
    err_disk_full: "The server's disk is full.",
    err_forbidden_host: "Refused for this address: open the page at the server's own address, or give the page a token.",
    err_forbidden: "Not allowed.",
    err_not_found: "Not found.",
    err_not_found_library: "The voice library is off on this server (--no-library).",
    err_library_off: "The voice library is off on this server (--no-library).",
    err_load_failed: "The voice could not be loaded.",
    err_method_not_allowed: "This action is not allowed here.",
    err_internal: "Something went wrong on the server; its log says more.",
    err_unknown_voice: "No such voice.",
    err_not_measurable: "Nothing to measure: the speed is measured under precision auto, once the voice's int8 version is made.",
    measure_again: "Measure the speed again",
    measuring_again: "Measuring in the background (it pauses while requests run); the reason above changes when it is done.",
    err_name_invalid: "This name cannot be used.",
    err_name_taken: "A voice already has this name: choose another one.",
    err_already_installed: "This voice is already installed.",
    err_not_in_library: "This voice is not in the voice library.",
    err_configured_voice: "This voice comes from the server's configuration: change the configuration to remove it.",
    err_in_use: "This voice is in use (by a preset or as the default voice): change that first.",
    err_source_invalid: "Not a source the voice library takes: an AivisHub page or UUID, an official voice's name or an hf:// repository.",
    err_file_invalid: "Not a voice file this server can read (.aivmx / .aivm).",
    err_not_supported: "This server cannot run this voice.",
    err_memory: "Not enough memory for this voice.",
    err_hub_unreachable: "AivisHub could not be reached: check the network and try again.",
    err_hub_error: "AivisHub answered with an error.",
    err_queue_full: "Too many installs are waiting: try again when one has finished.",
    err_bert_missing: "The first neural voice needs the shared BERT model (about 500 MB), and the server is offline: fetch it into the cache first.",
    err_job_not_found: "No such install (the server may have restarted).",
    err_job_ended: "This install has already ended.",
    err_job_busy: "This install is loading its voice and cannot stop now.",
    err_throttled: "Asked too often: try again in a moment.",
    err_cancelled: "Cancelled.",
    err_busy: "The server is busy: try again in a moment.",
    err_unknown_style: "This voice has no such style.",
    err_unknown_word: "No such word in the dictionary.",
    err_bad_request_surface: "Write the word as it appears in text, at most 64 characters.",
    err_bad_request_reading: "Write how it is read, in katakana or hiragana, at most 64 characters.",
    err_bad_request_accent: "A whole number (0 = flat), or empty for automatic.",
    err_bad_request_priority: "A whole number from 0 to 10.",
    err_bad_request_text: "Write something to say (within the server's limit of characters).",
    field_source: "Source", field_name: "Name", field_file: "File", field_job: "Install",
    field_body: "Request", field_library: "Voice library", field_surface: "Word",
    field_reading: "Reading", field_accent: "Accent", field_priority: "Priority",
    field_text: "Text", field_voice: "Voice", field_style: "Style", field_path: "Address",
  },
  ja: {
    tab_voices: "ボイス", tab_try: "試す", tab_dictionary: "辞書", tab_library: "ライブラリ", tab_status: "状態",
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
    style_ids: "スタイル ID（エンジン API）", copy: "コピー", copied: "コピー済み", selected: "選択済み",
    copy_id: "{style} のスタイル ID をコピー", copy_url: "アドレスをコピー",
    copy_hint: "Ctrl+C（⌘C）か長押しでコピーしてください（http で開いたページからはブラウザーがコピーを許しません）。",
    engine_api: "エンジン API", off: "無効", api_voicevox: "VOICEVOX / AivisSpeech", api_openai: "OpenAI の base_url",
    engine_api_voices: "クライアントではスタイルを下の ID で指定します。OpenAI の voice は声の名前か「名前:スタイル」です。",
    engine_api_local: "サーバーと同じ機器からのみ使えます（他の機器からは `--engine-api-host` とトークンで）。",
    engine_api_token: "クライアントはトークンを `Authorization: Bearer TOKEN` で送ります。",
    openai_voices: "OpenAI の声の名前で話す声", openai_voices_hint: "`--openai-voice alloy=声` で変えられます（アドオンでは `openai_voices`）。",
    engine_api_off: "エンジン API（VOICEVOX / AivisSpeech・OpenAI 音声）は無効です。下のスタイル ID は有効にしたときに使われるものです。`--engine-api-port 10101` を付けて起動してください（アドオンでは `engine_api_token` を設定）。",
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
    lib_install: "声を追加",
    lib_install_hint: "AivisHub のページ URL かモデル UUID、公式ボイスの名前、hf:// のリポジトリを貼り付けるか、.aivmx / .aivm ファイルをアップロードします。準備ができ次第、再起動なしで使え、Home Assistant にも表示されます。",
    lib_source: "AivisHub のリンク・UUID・ボイス名・hf://", lib_name: "名前（省略可）",
    lib_install_button: "追加", lib_upload: ".aivmx / .aivm をアップロード",
    lib_official: "hayakoe 公式ボイス", lib_jobs: "追加の進み具合", lib_installed: "声",
    lib_voice: "声", lib_version: "バージョン", lib_size: "サイズ", lib_license: "ライセンス",
    lib_from: "入手元", lib_int8: "int8",
    lib_configured: "設定済み", lib_configured_hint: "起動オプションまたはアドオンの設定で指定された声です。削除するには設定を変更してください。",
    lib_flags: "起動オプション・設定", lib_uploaded: "アップロード",
    lib_update: "更新", lib_remove: "削除", lib_have: "追加済み",
    lib_install_named: "{name} を追加", lib_need_source: "先に AivisHub のリンク・UUID・ボイス名・hf:// を入力してください。",
    lib_confirm_remove: "{name} を削除しますか？ファイルも削除されます。",
    lib_upload_failed: "{file}：アップロードがサーバーに届きませんでした。",
    job_uploading: "アップロード中", job_queued: "待機中", job_downloading: "ダウンロード中",
    job_checking: "確認中", job_converting: "変換中", job_loading: "読み込み中",
    job_ready: "完了", job_failed: "失敗", job_cancelled: "キャンセル済み",
    int8_queued: "待機中", int8_making: "作成中", int8_switching: "切り替え中",
    int8_int8: "int8", int8_fp32: "fp32", int8_bf16: "bf16", int8_fp16: "fp16",
    int8_failed: "失敗", int8_cancelled: "キャンセル",
    job_contacting: "AivisHub に問い合わせ中",
    lib_dismiss: "閉じる", lib_details: "詳細", lib_license_more: "ライセンス全文",
    err_bad_json: "リクエストを JSON として読めませんでした。",
    err_bad_request: "リクエストの内容が正しくありません。",
    err_too_large: "大きすぎます（サーバーの上限を超えています）。",
    err_disk_full: "サーバーのディスクがいっぱいです。",
    err_forbidden_host: "このアドレスからは使えません。サーバー自身のアドレスで開くか、トークンを設定してください。",
    err_forbidden: "許可されていません。",
    err_not_found: "見つかりません。",
    err_not_found_library: "このサーバーではボイスライブラリが無効です（--no-library）。",
    err_library_off: "このサーバーではボイスライブラリが無効です（--no-library）。",
    err_load_failed: "声を読み込めませんでした。",
    err_method_not_allowed: "この操作はここではできません。",
    err_internal: "サーバーで問題が起きました。詳しくはサーバーのログをご覧ください。",
    err_unknown_voice: "その声はありません。",
    err_not_measurable: "計測するものがありません。速度は精度 auto で、声の int8 版ができてから計測します。",
    measure_again: "速度を計測し直す",
    measuring_again: "バックグラウンドで計測しています（リクエストの間は止まります）。終わると上の理由が変わります。",
    err_name_invalid: "この名前は使えません。",
    err_name_taken: "同じ名前の声がすでにあります。別の名前にしてください。",
    err_already_installed: "この声はすでに追加されています。",
    err_not_in_library: "この声はボイスライブラリにありません。",
    err_configured_voice: "サーバーの設定で指定された声です。削除するには設定を変更してください。",
    err_in_use: "この声は使用中です（プリセットまたは既定の声）。先にそちらを変更してください。",
    err_source_invalid: "ボイスライブラリに追加できない入手元です。AivisHub のページか UUID、公式ボイスの名前、hf:// のリポジトリを指定してください。",
    err_file_invalid: "このサーバーが読める声のファイル（.aivmx / .aivm）ではありません。",
    err_not_supported: "このサーバーではこの声を動かせません。",
    err_memory: "この声を読み込むにはメモリが足りません。",
    err_hub_unreachable: "AivisHub に接続できませんでした。ネットワークを確認して、もう一度お試しください。",
    err_hub_error: "AivisHub がエラーを返しました。",
    err_queue_full: "順番待ちの追加が多すぎます。どれかが終わってから、もう一度お試しください。",
    err_bert_missing: "最初のニューラル音声には共有の BERT モデル（約 500 MB）が必要ですが、サーバーがオフラインです。先にキャッシュへ取得してください。",
    err_job_not_found: "その追加は見つかりません（サーバーが再起動したのかもしれません）。",
    err_job_ended: "この追加はすでに終わっています。",
    err_job_busy: "声を読み込み中のため、今は止められません。",
    err_throttled: "問い合わせが多すぎます。少し待ってからお試しください。",
    err_cancelled: "キャンセルしました。",
    err_busy: "サーバーが混み合っています。少し待ってからお試しください。",
    err_unknown_style: "この声にそのスタイルはありません。",
    err_unknown_word: "その単語は辞書にありません。",
    err_bad_request_surface: "文章中の書き方で、64 文字以内で入力してください。",
    err_bad_request_reading: "読みをカタカナかひらがなで、64 文字以内で入力してください。",
    err_bad_request_accent: "整数（0 は平板）か、空欄（自動）にしてください。",
    err_bad_request_priority: "0 から 10 の整数にしてください。",
    err_bad_request_text: "話す文を入力してください（サーバーの文字数の上限まで）。",
    field_source: "入手元", field_name: "名前", field_file: "ファイル", field_job: "追加",
    field_body: "リクエスト", field_library: "ボイスライブラリ", field_surface: "表記",
    field_reading: "読み", field_accent: "アクセント", field_priority: "優先度",
    field_text: "テキスト", field_voice: "声", field_style: "スタイル", field_path: "アドレス",
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

// -- errors in the page's language --------------------------------------------------------
// Every `/api` error is `{"error": "<English sentence>", "code": "<snake_case>", "field"?}` and a
// failed job carries `error_code`: the page shows its own words for the code (the server's
// sentence, kept as the detail, where it has none) and names the field where one is given.

const STATUS_CODES = { 400: "bad_request", 403: "forbidden", 404: "not_found", 405: "method_not_allowed", 413: "too_large", 500: "internal", 507: "disk_full" };

function words(key) {  // the page's words for a key, or null (no English fallback across keys)
  const table = STRINGS[LANG] || STRINGS.en;
  return Object.prototype.hasOwnProperty.call(table, key) ? table[key]
    : Object.prototype.hasOwnProperty.call(STRINGS.en, key) ? STRINGS.en[key] : null;
}

// {text, bare, detail, code, field}: `text` is what to show (the field named), `bare` the
// same without the field (shown beside it), `detail` the server's own sentence when the
// page's words replace it
function errorInfo(data, status) {
  data = data && typeof data === "object" ? data : {};
  const sentence = typeof data.error === "string" ? data.error : "";
  const code = data.code || data.error_code || (!sentence && STATUS_CODES[status]) || "";
  const field = typeof data.field === "string" ? data.field : (data.error_field || "");
  let bare = (code && field && words(`err_${code}_${field}`)) || (code && words(`err_${code}`)) || null;
  const known = bare !== null;
  if (!known) bare = sentence || (status ? `${status}` : t("error"));
  let text = bare;
  if (field && !(!known && sentence.toLowerCase().startsWith(`${field.toLowerCase()}:`))) {
    text = `${words(`field_${field}`) || field}${LANG === "ja" ? "：" : ": "}${bare}`;
  }
  return { text, bare, detail: known && sentence ? sentence : "", code, field };
}

function apiError(data, status) {
  const info = errorInfo(data, status);
  const err = new Error(info.text);
  err.status = status;
  err.data = data;
  err.info = info;
  return err;
}

// an error's words in `node` (its field's words with `bare`), the server's sentence as the title
function showError(node, err, bare) {
  const info = err && err.info;
  node.textContent = info ? (bare ? info.bare : info.text) : String((err && err.message) || err || "");
  if (info && info.detail) node.title = info.detail; else node.removeAttribute("title");
  if (info && info.code) node.dataset.code = info.code; else delete node.dataset.code;
}

async function api(path, options) {
  const res = await fetch(path, Object.assign({ credentials: "same-origin" }, options || {}));
  let data = null;
  const type = res.headers.get("Content-Type") || "";
  if (type.includes("json")) data = await res.json().catch(() => null);
  if (!res.ok) throw apiError(data, res.status);
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
  showError(banner, err);
  banner.textContent = `${t("error")}${LANG === "ja" ? "：" : ": "}${banner.textContent}`;
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

// -- copying an ID or an address ----------------------------------------------------------
// navigator.clipboard exists only in a secure context (https, localhost): on a page opened
// over plain http on a LAN it is missing, so the text is selected and the browser's own copy
// command tried; where that fails too, the person copies the selection (the note says how).

function selectText(node) {
  const range = document.createRange();
  range.selectNodeContents(node);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}

// "clipboard", "command" (execCommand copied the selection) or "selected"
async function copyText(node) {
  const text = node.textContent;
  if (navigator.clipboard && typeof navigator.clipboard.writeText === "function") {
    try {
      await navigator.clipboard.writeText(text);
      return "clipboard";
    } catch (e) { /* refused (permissions, no focus): select it instead */ }
  }
  selectText(node);
  let copied = false;
  try { copied = document.execCommand("copy"); } catch (e) { copied = false; }
  return copied ? "command" : "selected";
}

// a Copy button for `target`'s text; `note` shows how to copy a selection by hand
function copyButton(target, label, note) {
  const b = el("button", { type: "button", class: "small copy", title: label, "aria-label": label, text: t("copy") });
  let timer = null;
  b.addEventListener("click", async () => {
    const how = await copyText(target);
    b.dataset.copied = how;
    b.textContent = how === "selected" ? t("selected") : t("copied");
    if (note) note.hidden = how !== "selected";
    clearTimeout(timer);
    timer = setTimeout(() => { b.textContent = t("copy"); }, 2500);
  });
  return b;
}

function copyNote() {
  return el("p", { class: "hint copy-note", text: t("copy_hint"), hidden: true, "aria-live": "polite" });
}

// the engine APIs' address as a client on this network writes it: a wildcard bind is reached
// by the name this page was opened with
function engineApiBase(api) {
  if (!api || !api.on || !api.port) return null;
  let host = api.host || location.hostname;
  if (host === "0.0.0.0" || host === "::") host = location.hostname;
  if (host.includes(":") && !host.startsWith("[")) host = `[${host}]`;
  return `http://${host}:${api.port}`;
}

function isLoopback(host) {
  return host === "localhost" || host === "::1" || /^127\./.test(host);
}

// a hint whose `quoted` parts (flags, options, headers) are code that does not break
function hint(text, cls) {
  const p = el("p", { class: cls ? `hint ${cls}` : "hint" });
  text.split("`").forEach((part, i) => { if (part) p.append(i % 2 ? el("code", { class: "flag", text: part }) : part); });
  return p;
}

function renderEngineApi(api) {
  const box = $("#engine-api");
  box.replaceChildren();
  box.hidden = !api;
  if (!api) return;  // an older server: nothing said
  const base = engineApiBase(api);
  box.dataset.on = base ? "true" : "false";
  box.append(el("h2", {}, t("engine_api"), base ? null : el("span", { class: "tag", text: t("off") })));
  if (!base) {
    box.append(hint(t("engine_api_off"), "off"));
    return;
  }
  const note = copyNote();
  const facts = el("dl", { class: "facts api-urls" });
  for (const [label, url, id] of [[t("api_voicevox"), base, "engine-api-url"], [t("api_openai"), `${base}/v1`, "openai-api-url"]]) {
    const code = el("code", { id, class: "copyable", text: url });
    facts.append(el("dt", { text: label }), el("dd", {}, code, " ", copyButton(code, t("copy_url"), note)));
  }
  box.append(facts, note, el("p", { class: "hint", text: t("engine_api_voices") }));
  if (isLoopback(api.host)) box.append(hint(t("engine_api_local")));
  if (api.token) box.append(hint(t("engine_api_token")));
  if (api.openai_voices) box.append(openAiVoices(api.openai_voices));
}

// OpenAI's voice names (alloy ... cedar) and the served voice each speaks with, grouped by voice
function openAiVoices(table) {
  const byVoice = new Map();
  for (const [name, voice] of Object.entries(table)) {
    if (!byVoice.has(voice)) byVoice.set(voice, []);
    byVoice.get(voice).push(name);
  }
  const facts = el("dl", { class: "facts openai-voices", id: "openai-voices" });
  for (const [voice, names] of byVoice) {
    facts.append(el("dt", {}, el("code", { text: voice })), el("dd", { text: names.join(", ") }));
  }
  const section = el("div", {}, el("h3", { text: t("openai_voices") }), facts);
  section.append(hint(t("openai_voices_hint")));
  return section;
}

// a voice's styles with the IDs the engine API serves (GET /speakers), each selectable and
// copyable; null where the server gave none
function styleIds(v) {
  if (!v.style_ids) return null;
  const note = copyNote();
  const list = el("ul", { class: "style-ids" });
  for (const style of v.styles) {
    const id = v.style_ids[style];
    if (id === undefined || id === null) continue;
    const code = el("code", { class: "style-id copyable", data_style: style, text: String(id) });
    list.append(el("li", { data_style: style },
      el("span", { class: "style-name", text: style }), code,
      copyButton(code, t("copy_id", { style: `${v.name}:${style}` }), note)));
  }
  return [el("h3", { text: t("style_ids") }), list, note];
}

async function renderVoices() {
  const data = await loadVoices();
  renderEngineApi(data.engine_api);
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
      styles,
      ...(styleIds(v) || [])));
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
    if (!res.ok) throw apiError(await res.json().catch(() => null), res.status);
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
      showError(err, e);
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
    if (!res.ok) throw apiError(await res.json().catch(() => null), res.status);
    const url = URL.createObjectURL(await res.blob());
    const a = el("a", { href: url, download: "hayakoe.wav" });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) {
    showError($("#speak-error"), e);
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

function showFieldError(field, message) {  // a string, or an API error (its field is the place)
  const target = $(`#err-${field}`) || $("#err-entry");
  if (typeof message === "string") { target.textContent = message; target.removeAttribute("title"); }
  else showError(target, message, target.id !== "err-entry");
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
      el("td", { class: "accent" }, accentCell(w)),
      el("td", { class: "priority", data_label: t("priority_short"), text: String(w.priority) }),
      el("td", { class: "row-actions" },
        el("button", { class: "small", text: t("edit"), onclick: () => editWord(w) }),
        el("button", { class: "small danger", text: t("delete"), onclick: () => deleteWord(w) }))));
  }
  for (const w of data.readonly) {
    body.append(el("tr", { class: "readonly", data_surface: w.surface },
      el("td", { class: "surface" }, w.surface, " ",
        el("span", { class: "tag", title: `${t("from_file")} ${w.source}`, text: `${t("readonly")} · ${w.source}` })),
      el("td", { class: "reading", text: w.reading }),
      el("td", { class: "accent" }, accentCell(w)),
      el("td", { class: "priority", data_label: t("priority_short"), text: String(w.priority) }),
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
    showFieldError((e.data && e.data.field) || "entry", e);
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

// -- library -----------------------------------------------------------------------------
// Voices installed while the server runs (`api/library`): an install is a job followed by
// polling its endpoint (a bounded interval: quick while it moves, slow while only its int8
// is being made in the background, none when nothing runs).

const JOB_POLL_MS = 400;
const INT8_POLL_MS = 3000;
const JOB_FINAL = new Set(["ready", "failed", "cancelled"]);
const INT8_FINAL = new Set(["int8", "fp32", "bf16", "fp16", "failed", "cancelled", ""]);
const CANCELLABLE = new Set(["uploading", "queued", "contacting", "downloading", "checking"]);
const HUB_PAGE = "https://hub.aivis-project.com/aivm-models/";

const UPDATE_CHECK_MS = 10 * 60 * 1000;
const lib = {
  checkedAt: 0,
  listing: null,
  jobs: new Map(),      // id → the job as the API answered it (or an upload on its way)
  timer: null,
  polling: false,
  uploads: 0,
};

function formatSize(n) {
  if (!n) return "—";
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(2)} GB`;
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MB`;
  return `${Math.max(1, Math.round(n / 1024))} KB`;
}

// an error (an API error, or words of the page) in `node`: the words, and the server's own
// sentence behind "Details" where it says more
function errorContent(node, err) {
  const info = err && err.info;
  node.replaceChildren(el("span", { class: "error-text", text: info ? info.text : String((err && err.message) || err || "") }));
  if (info && info.code) node.dataset.code = info.code; else delete node.dataset.code;
  if (info && info.detail) {
    node.append(el("details", { class: "error-detail" },
      el("summary", { text: t("lib_details") }), el("span", { lang: "en", text: info.detail })));
  }
}

function libError(err) {
  const node = $("#lib-error");
  if (err) errorContent(node, err); else node.replaceChildren();
  node.hidden = !err;
}

// -- licenses: Markdown shown as text (never as HTML), its marks taken away ---------------------

function markdownToText(md) {
  const lines = [];
  let fence = false;
  for (let line of String(md || "").replace(/\r\n?/g, "\n").split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) { fence = !fence; continue; }
    if (!fence) {
      if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { lines.push(""); continue; }  // a rule
      if (/^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(line)) continue;  // a table's rule
      if (/^\s*(=+|-+)\s*$/.test(line) && lines.length && lines[lines.length - 1]) continue;  // a setext underline
      line = line
        .replace(/^\s{0,3}#{1,6}(\s+|$)/, "")     // heading marks
        .replace(/\s+#+\s*$/, "")                  // closing heading marks
        .replace(/^(\s*>)+\s?/, "")                // quotes
        .replace(/^(\s*)[-*+]\s+\[[ xX]\]\s+/, "$1☐ ")
        .replace(/^(\s*)[-*+]\s+/, "$1• ")         // list items
        .replace(/^\s*\|(.*)\|\s*$/, (m, cells) => cells.trim()).replace(/\s*\|\s*/g, " | ")  // table cells
        .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")   // images: their text
        .replace(/\[([^\]]+)\]\(([^)\s]+)[^)]*\)/g, (m, text, url) => (text === url ? url : `${text} (${url})`))
        .replace(/<(https?:[^>\s]+)>/g, "$1")
        .replace(/<\/?[A-Za-z][^>]*>/g, "")          // inline HTML tags
        .replace(/(\*\*|__)(?=\S)(.+?)(?<=\S)\1/g, "$2")
        .replace(/(^|[^\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?!\w)/g, "$1$2")
        .replace(/(^|[^\w])_(?=\S)([^_]+?)(?<=\S)_(?!\w)/g, "$1$2")
        .replace(/~~(.+?)~~/g, "$1")
        .replace(/`([^`]+)`/g, "$1")
        .replace(/\\([\\`*_{}\[\]()#+\-.!|>])/g, "$1");
    }
    lines.push(line.replace(/\s+$/, ""));
  }
  return lines.join("\n").replace(/\n{3,}/g, "\n\n").trim();
}

// a license as text: its first line, and the whole text behind it where there is more
function licenseNode(license) {
  const text = markdownToText(license);
  if (!text) return null;
  const [first, ...rest] = text.split("\n");
  const more = rest.join("\n").trim();
  if (!more) return el("span", { class: "license", text: first });
  return el("details", { class: "license" },
    el("summary", { text: first, title: t("lib_license_more") }),
    el("div", { class: "license-text", text: more }));
}

// the other tabs list the voices as they are now
function voicesChanged() {
  VOICES = null;
  $("#voice").replaceChildren();
  if (!$("#view-voices").hidden) loaders.voices();
  if (!$("#view-try").hidden) loaders.try();
}

function int8Text(int8) {
  const states = [...new Set(Object.values(int8 || {}).filter(Boolean))];
  return states.map((s) => t(`int8_${s}`)).join(", ");
}

function int8Busy(int8) {
  return Object.values(int8 || {}).some((s) => !INT8_FINAL.has(s));
}

function jobPercent(job) {
  if (job.state === "ready") return 100;
  if ((job.state === "downloading" || job.state === "uploading") && job.total) {
    return Math.min(100, (100 * job.bytes) / job.total);
  }
  if (job.state === "queued") return 0;
  return null;  // contacting, checking, converting, loading: no measure of how far, the bar runs
}

function jobTitle(job) {
  if (job.voices && job.voices.length) return job.voices.join(", ");
  if (job.name) return job.name;
  const source = String(job.source || "");
  if (source.startsWith("upload:")) return source.slice(7);
  return source.startsWith(HUB_PAGE) ? source.slice(HUB_PAGE.length) : source;
}

function renderJob(job) {
  const percent = jobPercent(job);
  const bar = el("progress", { class: "bar", max: "100" });
  if (percent !== null) bar.value = percent;
  bar.dataset.percent = percent === null ? "" : percent.toFixed(1);
  const parts = [t(`job_${job.state}`)];
  if (job.state === "downloading" || job.state === "uploading") {
    parts.push(job.total ? `${formatSize(job.bytes)} / ${formatSize(job.total)}` : formatSize(job.bytes));
  }
  if (job.state === "ready" && job.int8 && int8Text(job.int8)) parts.push(`int8: ${int8Text(job.int8)}`);
  const item = el("li", { class: `job ${job.state}`, data_job: job.id, data_state: job.state },
    el("div", { class: "job-head" },
      el("strong", { class: "job-title", text: jobTitle(job), title: job.source || "" }),
      job.action === "update" ? el("span", { class: "tag", text: t("lib_update") }) : null,
      el("span", { class: "job-state stats", text: parts.join(" · ") }),
      CANCELLABLE.has(job.state)
        ? el("button", { class: "small job-cancel", text: t("cancel"), onclick: () => cancelJob(job) })
        : null,
      JOB_FINAL.has(job.state) && !job.upload
        ? el("button", { class: "small job-dismiss", text: t("lib_dismiss"), onclick: () => dismissJob(job) })
        : null));
  if (job.state !== "failed" && job.state !== "cancelled") item.append(bar);
  if (job.error || job.error_code) {
    const error = el("div", { class: "error job-error", role: job.state === "failed" ? "alert" : null });
    errorContent(error, apiError({ error: job.error, code: job.error_code, field: job.error_field }, 0));
    item.append(error);
  }
  return item;
}

function renderJobs() {
  const list = $("#lib-jobs");
  const jobs = [...lib.jobs.values()].reverse();  // the newest first
  list.replaceChildren(...jobs.map(renderJob));
  $("#lib-jobs-card").hidden = jobs.length === 0;
}

function officialButtons(listing) {
  const box = $("#lib-official");
  const have = new Set([
    ...listing.configured.map((c) => c.name.toLowerCase()),
    ...listing.installed.flatMap((e) => [e.name, ...e.voices].map((n) => n.toLowerCase())),
  ]);
  box.replaceChildren();
  for (const name of listing.official || []) {
    const installed = have.has(name.toLowerCase());
    box.append(el("button", {
      class: "official", data_voice: name, disabled: installed,
      title: installed ? t("lib_have") : t("lib_install_named", { name }),
      onclick: () => installSource(name, null),
    }, installed ? "✓ " : "＋ ", name));
  }
}

function updateAvailable(entry) {  // the server compares versions (SemVer): never a downgrade
  return entry.update_available === true;
}

function sourceCell(entry) {
  const source = String(entry.source || "");
  if (entry.kind === "aivishub" && entry.uuid) {
    return el("a", { href: HUB_PAGE + entry.uuid, target: "_blank", rel: "noopener noreferrer", text: `AivisHub · ${entry.uuid.slice(0, 8)}` });
  }
  if (source.startsWith("upload:")) return el("span", { text: `${t("lib_uploaded")} · ${source.slice(7)}` });
  return el("span", { text: source });
}

function renderLibrary(listing) {
  lib.listing = listing;
  const body = $("#lib-table tbody");
  body.replaceChildren();
  for (const c of listing.configured) {
    body.append(el("tr", { class: "readonly", data_voice: c.name },
      el("td", { class: "lib-name" }, el("strong", { text: c.name }), " ", el("span", { class: "tag", title: t("lib_configured_hint"), text: t("lib_configured") })),
      el("td", { class: "blank", data_label: t("lib_version"), text: "—" }),
      el("td", { class: "blank", data_label: t("lib_size"), text: "—" }),
      el("td", { class: "blank", data_label: t("lib_license"), text: "—" }),
      el("td", { data_label: t("lib_from"), text: t("lib_flags") }),
      el("td", { data_label: t("lib_int8"), text: c.precision ? t(`int8_${c.precision}`) : "—" }),
      el("td", { class: "blank" })));
  }
  for (const e of listing.installed) {
    const name = el("td", { class: "lib-name" }, el("strong", { text: e.name }));
    if (e.voices.length > 1 || e.voices[0] !== e.name) {
      name.append(el("div", { class: "hint", text: e.voices.join(", ") }));
    }
    const actions = el("td", { class: "row-actions" });
    if (updateAvailable(e)) {
      actions.append(el("button", {
        class: "small lib-update", text: e.latest_version ? `${t("lib_update")} → ${e.latest_version}` : t("lib_update"),
        onclick: () => updateVoice(e),
      }));
    }
    actions.append(el("button", { class: "small danger lib-remove", text: t("lib_remove"), onclick: () => removeVoice(e) }));
    const license = el("td", { class: "lib-license", data_label: t("lib_license") }, licenseNode(e.license));
    const creators = (e.creators || []).join(", ");
    if (creators) license.append(el("div", { class: "hint creators", text: creators }));
    if (!license.childNodes.length) license.textContent = "—";
    body.append(el("tr", { class: "installed", data_voice: e.name },
      name,
      el("td", { data_label: t("lib_version"), text: e.version || "—" }),
      el("td", { class: "num", data_label: t("lib_size"), text: formatSize(e.size) }),
      license,
      el("td", { data_label: t("lib_from") }, sourceCell(e)),
      el("td", { class: "lib-int8", data_label: t("lib_int8"), text: int8Text(e.int8) || "—" }),
      actions));
  }
  officialButtons(listing);
  const listed = new Set();
  for (const job of listing.jobs || []) {  // jobs started elsewhere (another tab, a script, before a reload)
    listed.add(job.id);
    if (dismissedHere(job)) continue;
    if (!JOB_FINAL.has(job.state) || job.state === "failed" || lib.jobs.has(job.id)) {
      lib.jobs.set(job.id, Object.assign(lib.jobs.get(job.id) || {}, job));
    }
  }
  for (const [id, job] of lib.jobs) {  // a failed job dismissed elsewhere, or forgotten by a restart
    if (job.state === "failed" && !job.upload && !listed.has(id)) lib.jobs.delete(id);
  }
  renderJobs();
  schedulePoll();
}

async function loadLibrary() {
  try {
    renderLibrary(await api("api/library"));
    $("#lib-off").hidden = true;
    checkUpdates();
  } catch (e) {
    if (e.status === 404 && e.data && (e.data.field === "library" || e.data.code === "library_off")) {
      const off = $("#lib-off");
      off.textContent = t("err_library_off");
      off.hidden = false;
      for (const id of ["#lib-install", "#lib-file", "#lib-source", "#lib-name"]) $(id).disabled = true;
      return;
    }
    throw e;
  }
}
loaders.library = () => loadLibrary().catch(globalError);

function checkUpdates() {  // AivisHub asked for newer versions, at most every 10 minutes
  const now = Date.now();
  if (lib.checkedAt && now - lib.checkedAt < UPDATE_CHECK_MS) return;
  lib.checkedAt = now;
  api("api/library?check=1").then(renderLibrary).catch(() => {});  // the listing stays as it was
}

function schedulePoll() {
  if (lib.timer !== null || lib.polling) return;
  const jobs = [...lib.jobs.values()].filter((j) => !j.upload);
  const moving = jobs.some((j) => !JOB_FINAL.has(j.state));
  const int8 = jobs.some((j) => j.state === "ready" && int8Busy(j.int8));
  if (!moving && !int8) return;
  lib.timer = setTimeout(pollJobs, moving ? JOB_POLL_MS : INT8_POLL_MS);
}

async function pollJobs() {
  lib.timer = null;
  lib.polling = true;
  let changed = false;
  try {
    for (const job of [...lib.jobs.values()]) {
      if (job.upload) continue;
      const watched = !JOB_FINAL.has(job.state) || (job.state === "ready" && int8Busy(job.int8));
      if (!watched) continue;
      try {
        const now = await api(`api/library/jobs/${encodeURIComponent(job.id)}`);
        if (now.state !== job.state && JOB_FINAL.has(now.state)) changed = true;
        if (now.state === "ready" && int8Text(now.int8) !== int8Text(job.int8)) changed = true;
        lib.jobs.set(job.id, now);
      } catch (e) {
        if (e.status === 404) lib.jobs.delete(job.id);  // forgotten by a restarted server
        else throw e;
      }
    }
    renderJobs();
    if (changed) {
      voicesChanged();
      renderLibrary(await api("api/library"));
    }
  } catch (e) {
    libError(e);
  } finally {
    lib.polling = false;
    schedulePoll();
  }
}

function followJob(id, source, action) {
  lib.jobs.set(id, { id, source, action: action || "install", state: "queued", bytes: 0, total: null, voices: [] });
  renderJobs();
  schedulePoll();
}

async function installSource(source, name) {
  libError("");
  source = (source || "").trim();
  if (!source) { libError(t("lib_need_source")); return; }
  const body = { source };
  if (name) body.name = name;
  try {
    const answer = await postJSON("api/library/install", body);
    followJob(answer.job, source);
    if ($("#lib-source").value.trim() === source) $("#lib-source").value = "";
    $("#lib-name").value = "";
  } catch (e) {
    libError(e);
  }
}

// a file sent as a multipart form; XMLHttpRequest reports how much has gone (fetch cannot)
function uploadFile(file) {
  libError("");
  const id = `upload-${++lib.uploads}`;
  const job = { id, upload: true, source: `upload:${file.name}`, state: "uploading", bytes: 0, total: file.size, voices: [] };
  const form = new FormData();
  form.append("file", file, file.name);
  const name = $("#lib-name").value.trim();
  if (name) form.append("name", name);
  const xhr = new XMLHttpRequest();
  job.xhr = xhr;
  lib.jobs.set(id, job);
  renderJobs();
  xhr.open("POST", "api/library/install");
  xhr.responseType = "json";
  xhr.upload.onprogress = (e) => {
    job.bytes = e.loaded;
    if (e.lengthComputable) job.total = e.total;
    renderJobs();
  };
  xhr.onload = () => {
    lib.jobs.delete(id);
    const data = xhr.response || {};
    if (xhr.status === 202 && data.job) {
      $("#lib-name").value = "";
      followJob(data.job, job.source);
    } else {
      libError(apiError(xhr.response, xhr.status));
      renderJobs();
    }
  };
  xhr.onerror = () => { lib.jobs.delete(id); libError(t("lib_upload_failed", { file: file.name })); renderJobs(); };
  xhr.onabort = () => { lib.jobs.delete(id); renderJobs(); };
  xhr.send(form);
}

async function cancelJob(job) {
  if (job.upload) { job.xhr.abort(); return; }
  try {
    lib.jobs.set(job.id, await postJSON(`api/library/jobs/${encodeURIComponent(job.id)}/cancel`, {}));
    renderJobs();
  } catch (e) {
    libError(e);
  }
}

// A job dismissed here while the server could not forget it (an older server without the
// dismiss endpoint answers 404): kept hidden in this browser, by its id, source and error (ids
// start again at a restart).
const DISMISSED_KEY = "hayakoe.dismissed-jobs";

function dismissKey(job) { return JSON.stringify([job.id, job.source || "", job.error || ""]); }

function dismissedHere(job) {
  try { return (JSON.parse(localStorage.getItem(DISMISSED_KEY)) || []).includes(dismissKey(job)); }
  catch (e) { return false; }
}

function keepDismissed(job) {
  try {
    const keys = (JSON.parse(localStorage.getItem(DISMISSED_KEY)) || []).filter((k) => k !== dismissKey(job));
    keys.push(dismissKey(job));
    localStorage.setItem(DISMISSED_KEY, JSON.stringify(keys.slice(-100)));
  } catch (e) { /* storage off: hidden until the next reload */ }
}

async function dismissJob(job) {
  libError("");
  if (job.state === "failed") {  // the server keeps a failed job until it is dismissed
    try {
      await postJSON(`api/library/jobs/${encodeURIComponent(job.id)}/dismiss`, {});
    } catch (e) {
      if (e.status === 404 || e.status === 405) keepDismissed(job);  // no such endpoint (or job)
      else { libError(e); return; }
    }
  }
  lib.jobs.delete(job.id);
  renderJobs();
}

async function removeVoice(entry) {
  libError("");
  if (!window.confirm(t("lib_confirm_remove", { name: entry.name }))) return;
  try {
    await postJSON("api/library/remove", { name: entry.name });
    voicesChanged();
    await loadLibrary();
  } catch (e) {
    libError(e);
  }
}

async function updateVoice(entry) {
  libError("");
  try {
    const answer = await postJSON("api/library/update", { name: entry.name });
    followJob(answer.job, entry.source, "update");
  } catch (e) {
    libError(e);
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
    if (!v.precision_reason) continue;
    const dd = el("dd", { text: v.precision_reason });
    if (v.runs) {  // a neural voice: its speed measurement can be taken again
      const note = el("span", { class: "hint" });
      const b = el("button", { type: "button", class: "measure", data_voice: v.name, text: t("measure_again") });
      b.addEventListener("click", async () => {
        b.disabled = true;
        try {
          await postJSON(`api/voices/${encodeURIComponent(v.name)}/measure`, {});
          note.textContent = t("measuring_again");
        } catch (err) {
          showError(note, err);
          b.disabled = false;
        }
      });
      dd.append(" ", b, " ", note);
    }
    list.append(el("dt", { text: `${v.name}: ${t("precision")}` }), dd);
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
  $("#lib-install").addEventListener("click", () => installSource($("#lib-source").value, $("#lib-name").value.trim() || null));
  $("#lib-source").addEventListener("keydown", (e) => { if (e.key === "Enter") $("#lib-install").click(); });
  $("#lib-file").addEventListener("change", (e) => {
    if (e.target.files[0]) uploadFile(e.target.files[0]);
    e.target.value = "";
  });
  const view = (location.hash || "#voices").slice(1);
  show(["voices", "try", "dictionary", "library", "status"].includes(view) ? view : "voices");
  // the voices are needed by "Try it" too
  setupTry().catch(globalError);
}

document.addEventListener("DOMContentLoaded", start);
