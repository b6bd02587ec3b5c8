"""The texts, options and voice name the benchmarks speak with (hayakoe and ours alike).

Standard library only: hayakoe's own venv imports them, and `fullsize` (which builds the
voice) imports them without importing `voices` (which builds it on demand).
"""

from __future__ import annotations

from typing import Any

TEXTS: dict[str, str] = {
    # 17 characters, one sentence.
    "short": "こんにちは、今日はいい天気ですね。",
    # 76 characters, three sentences.
    "medium": (
        "リビングの照明を消して、エアコンを二十五度の冷房に設定しました。"
        "今夜は雨が降る予報なので、洗濯物は部屋の中に干しておくと安心です。窓も閉めておきますね。"
    ),
    # 283 characters, ten sentences.
    "long": (
        "本日の予定をお知らせします。午前九時から、駅前の会議室で月例の打ち合わせがあります。"
        "資料は昨日のうちに共有フォルダへ入れておきましたので、出発前に一度目を通しておいてください。"
        "お昼は取引先の方と一緒に、近くのそば屋で食事をする予定です。"
        "午後は三時から歯医者の予約が入っています。"
        "帰りにスーパーで牛乳と卵、それから食パンを買うのを忘れないでください。"
        "夜は雨が強くなる見込みなので、傘を持って出かけると良いでしょう。"
        "明日の朝は冷え込むため、寝る前に暖房のタイマーを六時に合わせておきます。"
        "週末は晴れる予報ですので、久しぶりに公園まで散歩に出かけてみてはいかがでしょうか。"
    ),
    # A Home Assistant Assist-style reply, three sentences.
    "assist": (
        "はい、キッチンの電気をつけました。玄関のドアは施錠されています。"
        "ほかに何かお手伝いできることはありますか？"
    ),
}

# The same generation options for both engines. sdp_ratio=0 makes the durations come from
# the deterministic predictor only, so both engines produce the same number of frames for
# the same text (up to int8-BERT rounding); the noise scales are hayakoe's defaults.
OPTIONS: dict[str, Any] = {
    "style": "Neutral",
    "speed": 1.0,
    "sdp_ratio": 0.0,
    "noise": 0.6,
    "noise_w": 0.8,
}

VOICE_NAME = "bench"
"""Name of the full-size random voice under `<root>/onnx/speakers/`."""

LLM_REPLIES: tuple[str, ...] = (
    # Short openings, with a comma.
    "はい、リビングの照明を消しました。",
    "了解です、エアコンを二十五度の冷房にしますね。",
    "おはようございます、今日は一日晴れる予報です。",
    "もちろんです、キッチンのタイマーを三分にセットしました。",
    "ええと、その部屋にはまだ対応しているデバイスがないようです。",
    # Short openings ending a sentence.
    "承知しました。寝室のカーテンを閉めます。",
    "できました。玄関のドアは施錠されています。",
    "こんにちは。何かお手伝いできることはありますか？",
    "わかりました！音楽を止めますね。",
    # Long openings with a comma in the middle.
    "今日の東京の天気は晴れのち曇りで、最高気温は十八度の予想です。",
    "明日の朝は冷え込むので、寝る前に暖房のタイマーを六時に合わせておきます。",
    "買い物リストに牛乳と卵を追加しましたが、食パンはすでに入っていました。",
    "洗濯機の運転が終わりましたので、早めに干すとしわになりにくいですよ。",
    # Long openings without a comma.
    "リビングとダイニングの照明をまとめて消しておきました。",
    "お風呂のお湯はりが終わったのでいつでも入れます。",
    "来週の月曜日の午前十時に歯医者の予約を登録しました。",
    # English device and service names.
    "Philips Hueのリビングのライトを、明るさ五十パーセントにしました。",
    "Spotifyでジャズのプレイリストを、キッチンのSonosで再生します。",
    "Google Homeのアラームは、明日の朝七時に設定されています。",
    # Numbers, times and units.
    "室温は23.5度、湿度は45パーセントです。",
    "現在の電力使用量は1.2キロワットで、昨日の同じ時間より少なめです。",
    "次のバスは8時15分発で、駅までおよそ12分かかります。",
    # A question and a long list.
    "どの部屋の電気を消しますか？リビング、寝室、それとも全部ですか？",
    "冷蔵庫の中には、牛乳、卵、ヨーグルト、それからキャベツが残っています。",
)
"""Replies a voice assistant's language model gives, for first audio at an LLM's pace:
openings short and long, with and without a comma, English names, numbers (24 replies)."""
