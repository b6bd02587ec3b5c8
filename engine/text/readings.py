"""Japanese readings for Latin-script words common around a Japanese smart home (data).

OpenJTalk knows a few Latin words (Wi-Fi, OK, Bluetooth) and spells every other one letter
by letter (``Backup`` → ビーエーシーケーユーピー). :mod:`engine.text.english` reads a Latin
word or phrase from this curated table first and asks ``kanalizer`` (an English → katakana
model) only for words that are not here, so the table also fixes kanalizer's known errors
for common loanwords (``garage`` ガラージュ → ガレージ, ``solar`` ソラー → ソーラー,
``hello`` ヘロ → ハロー, ``Chromecast`` クロメキャスト → クロームキャスト,
``today`` トデイ → トゥデイ, ``Toshiba`` トシバ → トーシバ, ``Remo`` レモ → リモ, ...).

Keys: a space or hyphen in a key matches a space, a hyphen, an underscore or nothing
(``Wi-Fi`` = ``WiFi`` = ``wi fi``); a key whose exact spelling matches wins over a key that
matches only when case is ignored (``ETC`` イーティーシー, ``etc`` エトセトラ). Longer
phrases win over their words. Values are katakana (what the words sound like to a Japanese
listener, the way a Japanese speaker would say them, not a translation).
"""

from __future__ import annotations

LATIN_READINGS: dict[str, str] = {
    # --- platforms, assistants, services --------------------------------------------------
    "Home Assistant": "ホームアシスタント", "HomeKit": "ホームキット", "Google Home": "グーグルホーム",
    "Google": "グーグル", "Nest": "ネスト", "Nest Hub": "ネストハブ", "Alexa": "アレクサ",
    "Amazon": "アマゾン", "Echo": "エコー", "Echo Dot": "エコードット", "Echo Show": "エコーショー",
    "Siri": "シリ", "Apple": "アップル", "iPhone": "アイフォーン", "iPad": "アイパッド",
    "iPod": "アイポッド", "iCloud": "アイクラウド", "Mac": "マック", "MacBook": "マックブック",
    "AirPods": "エアポッズ", "AirPlay": "エアプレイ", "HomePod": "ホームポッド", "Apple Watch": "アップルウォッチ",
    "Android": "アンドロイド", "Windows": "ウィンドウズ", "Linux": "リナックス", "Pixel": "ピクセル",
    "Galaxy": "ギャラクシー", "Chromecast": "クロームキャスト", "Chrome": "クローム",
    "Fire TV": "ファイアティービー", "Fire TV Stick": "ファイアティービースティック", "Apple TV": "アップルティービー",
    "Android TV": "アンドロイドティービー", "Google TV": "グーグルティービー",
    "YouTube": "ユーチューブ", "YouTube Music": "ユーチューブミュージック", "Netflix": "ネットフリックス",
    "Spotify": "スポティファイ", "Prime Video": "プライムビデオ", "Amazon Music": "アマゾンミュージック",
    "Apple Music": "アップルミュージック", "Disney": "ディズニー", "Hulu": "フールー", "Abema": "アベマ",
    "TVer": "ティーバー", "radiko": "ラジコ", "Audible": "オーディブル", "Kindle": "キンドル",
    "Gmail": "ジーメール", "Outlook": "アウトルック", "Calendar": "カレンダー",
    "LINE": "ライン", "Slack": "スラック", "Discord": "ディスコード", "Zoom": "ズーム", "Teams": "チームズ",
    "Telegram": "テレグラム", "WhatsApp": "ワッツアップ", "Instagram": "インスタグラム",
    "Facebook": "フェイスブック", "Twitter": "ツイッター", "Uber Eats": "ウーバーイーツ",
    "ChatGPT": "チャットジーピーティー", "OpenAI": "オープンエーアイ", "Gemini": "ジェミニ",
    "Claude": "クロード", "Copilot": "コパイロット", "Ollama": "オラマ",
    # --- smart-home brands and products ---------------------------------------------------
    "Philips Hue": "フィリップスヒュー", "Philips": "フィリップス", "Hue": "ヒュー",
    "SwitchBot": "スイッチボット", "Nature Remo": "ネイチャーリモ", "Nature": "ネイチャー", "Remo": "リモ",
    "Roomba": "ルンバ", "Braava": "ブラーバ", "iRobot": "アイロボット", "Dyson": "ダイソン",
    "Sonos": "ソノス", "Bose": "ボーズ", "Tesla": "テスラ", "Raspberry Pi": "ラズベリーパイ",
    "ESPHome": "イーエスピーホーム", "ESP32": "イーエスピーサンニー", "Arduino": "アルデュイーノ",
    "Node-RED": "ノードレッド", "Zigbee": "ジグビー", "Zigbee2MQTT": "ジグビーツーエムキューティーティー",
    "Z-Wave": "ゼットウェーブ", "Matter": "マター", "Thread": "スレッド", "Bluetooth": "ブルートゥース",
    "Wi-Fi": "ワイファイ", "Ethernet": "イーサネット", "Wyoming": "ワイオミング", "Assist": "アシスト",
    "Whisper": "ウィスパー", "Piper": "パイパー", "Frigate": "フリゲート", "Plex": "プレックス",
    "Jellyfin": "ジェリーフィン", "Kodi": "コディ", "Pi-hole": "パイホール", "Tailscale": "テイルスケール",
    "Nabu Casa": "ナブカーサ", "Aqara": "アカラ", "Xiaomi": "シャオミ", "Tuya": "トゥヤ",
    "SmartLife": "スマートライフ", "Shelly": "シェリー", "IKEA": "イケア", "TRADFRI": "トロードフリ",
    "Govee": "ゴビー", "Meross": "メロス", "TP-Link": "ティーピーリンク", "Tapo": "タポ", "Kasa": "カサ",
    "Ring": "リング", "Arlo": "アーロ", "Eufy": "ユーフィ", "Anker": "アンカー", "Wyze": "ワイズ",
    "Netatmo": "ネタトモ", "ecobee": "エコビー", "Honeywell": "ハネウェル", "Bosch": "ボッシュ",
    "Miele": "ミーレ", "LIFX": "ライフエックス", "Nanoleaf": "ナノリーフ", "SESAME": "セサミ",
    "Qrio": "キュリオ", "Panasonic": "パナソニック", "Sharp": "シャープ", "Hitachi": "ヒタチ",
    "Mitsubishi": "ミツビシ", "Toshiba": "トーシバ", "Daikin": "ダイキン", "Sony": "ソニー",
    "BRAVIA": "ブラビア", "AQUOS": "アクオス", "REGZA": "レグザ", "VIERA": "ビエラ", "Samsung": "サムスン",
    "LG": "エルジー", "Canon": "キヤノン", "Epson": "エプソン", "Brother": "ブラザー", "Nintendo": "ニンテンドー",
    "Switch": "スイッチ", "PlayStation": "プレイステーション", "PS4": "ピーエスフォー", "PS5": "ピーエスファイブ",
    "Xbox": "エックスボックス", "Synology": "シノロジー", "Ubiquiti": "ユビキティ", "UniFi": "ユニファイ",
    "Buffalo": "バッファロー", "NEC": "エヌイーシー", "Kindle Fire": "キンドルファイア",
    "Toyota": "トヨタ", "Nissan": "ニッサン", "Honda": "ホンダ", "Leaf": "リーフ", "Prius": "プリウス",
    # --- rooms and places -------------------------------------------------------------------
    "Living Room": "リビングルーム", "living": "リビング", "Bedroom": "ベッドルーム",
    "Master Bedroom": "マスターベッドルーム", "Kids Room": "キッズルーム", "Kid's Room": "キッズルーム",
    "Guest Room": "ゲストルーム", "Dining": "ダイニング", "Dining Room": "ダイニングルーム",
    "Kitchen": "キッチン", "Bathroom": "バスルーム", "Bath": "バス", "Toilet": "トイレット",
    "Restroom": "レストルーム", "Washroom": "ウォッシュルーム", "Laundry": "ランドリー",
    "Entrance": "エントランス", "Hallway": "ホールウェイ", "Hall": "ホール", "Garage": "ガレージ",
    "Garden": "ガーデン", "Balcony": "バルコニー", "Terrace": "テラス", "Patio": "パティオ",
    "Office": "オフィス", "Study": "スタディ", "Den": "デン", "Attic": "アティック", "Basement": "ベースメント",
    "Closet": "クローゼット", "Porch": "ポーチ", "Yard": "ヤード", "Backyard": "バックヤード",
    "Front Door": "フロントドア", "Back Door": "バックドア", "Room": "ルーム", "Floor": "フロア",
    "Upstairs": "アップステアーズ", "Downstairs": "ダウンステアーズ", "Stairs": "ステアーズ",
    "Gym": "ジム", "Studio": "スタジオ", "Loft": "ロフト", "Pantry": "パントリー", "Storage": "ストレージ",
    "Nursery": "ナーサリー", "Shed": "シェッド", "Pool": "プール", "Deck": "デッキ",
    # --- devices and appliances ---------------------------------------------------------------
    "light": "ライト", "lights": "ライト", "lamp": "ランプ", "bulb": "バルブ", "ceiling": "シーリング",
    "ceiling light": "シーリングライト", "desk lamp": "デスクランプ", "LED": "エルイーディー",
    "strip": "ストリップ", "LED strip": "エルイーディーストリップ", "spotlight": "スポットライト",
    "sensor": "センサー", "switch": "スイッチ", "camera": "カメラ", "door": "ドア", "window": "ウィンドウ",
    "lock": "ロック", "smart lock": "スマートロック", "doorbell": "ドアベル", "intercom": "インターコム",
    "plug": "プラグ", "smart plug": "スマートプラグ", "outlet": "アウトレット", "socket": "ソケット",
    "speaker": "スピーカー", "smart speaker": "スマートスピーカー", "display": "ディスプレイ",
    "TV": "テレビ", "television": "テレビ", "monitor": "モニター", "projector": "プロジェクター",
    "router": "ルーター", "printer": "プリンター", "scanner": "スキャナー", "hub": "ハブ", "bridge": "ブリッジ",
    "gateway": "ゲートウェイ", "thermostat": "サーモスタット", "heater": "ヒーター", "fan": "ファン",
    "ceiling fan": "シーリングファン", "air conditioner": "エアコンディショナー", "aircon": "エアコン",
    "air purifier": "エアピュリファイアー", "purifier": "ピュリファイアー", "humidifier": "ヒューミディファイアー",
    "dehumidifier": "ディーヒューミディファイアー", "vacuum": "バキューム", "robot vacuum": "ロボットバキューム",
    "cleaner": "クリーナー", "robot": "ロボット", "washer": "ウォッシャー", "washing machine": "ウォッシングマシン",
    "dryer": "ドライヤー", "dishwasher": "ディッシュウォッシャー", "fridge": "フリッジ", "refrigerator": "リフリジレーター",
    "freezer": "フリーザー", "oven": "オーブン", "microwave": "マイクロウェーブ", "toaster": "トースター",
    "kettle": "ケトル", "coffee maker": "コーヒーメーカー", "coffee": "コーヒー", "rice cooker": "ライスクッカー",
    "curtain": "カーテン", "curtains": "カーテン", "blind": "ブラインド", "blinds": "ブラインド",
    "shutter": "シャッター", "shade": "シェード", "gate": "ゲート", "mailbox": "メールボックス",
    "garage door": "ガレージドア", "motion sensor": "モーションセンサー", "door sensor": "ドアセンサー",
    "contact sensor": "コンタクトセンサー", "smoke detector": "スモークディテクター",
    "water heater": "ウォーターヒーター", "boiler": "ボイラー", "battery": "バッテリー", "charger": "チャージャー",
    "EV charger": "イーブイチャージャー", "solar": "ソーラー", "solar panel": "ソーラーパネル",
    "inverter": "インバーター", "meter": "メーター", "smart meter": "スマートメーター", "remote": "リモート",
    "controller": "コントローラー", "button": "ボタン", "dimmer": "ディマー", "valve": "バルブ",
    "pump": "ポンプ", "sprinkler": "スプリンクラー", "irrigation": "イリゲーション", "tablet": "タブレット",
    "phone": "フォン", "smartphone": "スマートフォン", "laptop": "ラップトップ", "server": "サーバー",
    "NAS": "ナス", "console": "コンソール", "soundbar": "サウンドバー", "subwoofer": "サブウーファー",
    "headphones": "ヘッドホン", "earphones": "イヤホン", "mic": "マイク", "microphone": "マイク",
    "satellite": "サテライト", "tracker": "トラッカー", "tag": "タグ", "beacon": "ビーコン",
    # --- states, modes, automations ---------------------------------------------------------
    "ON": "オン", "OFF": "オフ", "on": "オン", "off": "オフ", "open": "オープン", "opened": "オープン",
    "closed": "クローズ", "close": "クローズ", "locked": "ロック", "unlocked": "アンロック", "unlock": "アンロック",
    "home": "ホーム", "away": "アウェイ", "Away Mode": "アウェイモード", "mode": "モード", "eco": "エコ",
    "Eco Mode": "エコモード", "auto": "オート", "manual": "マニュアル", "boost": "ブースト", "turbo": "ターボ",
    "sleep": "スリープ", "Sleep Mode": "スリープモード", "night": "ナイト", "Night Mode": "ナイトモード",
    "day": "デイ", "cool": "クール", "heat": "ヒート", "dry": "ドライ", "fan only": "ファンオンリー",
    "idle": "アイドル", "standby": "スタンバイ", "armed": "アームド", "disarmed": "ディスアームド",
    "arm": "アーム", "disarm": "ディスアーム", "alarm": "アラーム", "timer": "タイマー", "scene": "シーン",
    "automation": "オートメーション", "automations": "オートメーション", "script": "スクリプト",
    "routine": "ルーティン", "trigger": "トリガー", "action": "アクション", "condition": "コンディション",
    "blueprint": "ブループリント", "dashboard": "ダッシュボード", "notification": "ノーティフィケーション",
    "notifications": "ノーティフィケーション", "reminder": "リマインダー", "schedule": "スケジュール", "vacation": "バケーション",
    "Vacation Mode": "バケーションモード", "Guest Mode": "ゲストモード", "party": "パーティー",
    "Movie Mode": "ムービーモード", "movie": "ムービー", "Movie Time": "ムービータイム", "relax": "リラックス",
    "Good Night": "グッドナイト", "good morning": "グッドモーニング", "good evening": "グッドイブニング",
    "welcome home": "ウェルカムホーム", "welcome": "ウェルカム", "presence": "プレゼンス", "motion": "モーション",
    "occupancy": "オキュパンシー", "temperature": "テンペラチャー", "humidity": "ヒューミディティー",
    "power": "パワー", "energy": "エネルギー", "battery low": "バッテリーロー", "low": "ロー", "high": "ハイ",
    "medium": "ミディアム", "max": "マックス", "min": "ミン", "mute": "ミュート", "volume": "ボリューム",
    "play": "プレイ", "pause": "ポーズ", "stop": "ストップ", "next": "ネクスト", "shuffle": "シャッフル",
    "repeat": "リピート", "playlist": "プレイリスト", "podcast": "ポッドキャスト", "backup": "バックアップ",
    "update": "アップデート", "upgrade": "アップグレード", "reboot": "リブート", "restart": "リスタート",
    "reset": "リセット", "setup": "セットアップ", "login": "ログイン", "logout": "ログアウト",
    "password": "パスワード", "online": "オンライン", "offline": "オフライン", "unavailable": "アンアベイラブル",
    "unknown": "アンノウン", "error": "エラー", "warning": "ワーニング", "alert": "アラート",
    "leak": "リーク", "smoke": "スモーク", "garbage": "ガーベージ", "trash": "トラッシュ", "recycle": "リサイクル",
    "pro": "プロ", "mini": "ミニ", "plus": "プラス", "ultra": "ウルトラ", "lite": "ライト",
    "air": "エア", "smart": "スマート", "smart home": "スマートホーム", "app": "アプリ", "apps": "アプリ",
    "email": "イーメール", "e-mail": "イーメール", "mail": "メール", "web": "ウェブ", "website": "ウェブサイト",
    "weather": "ウェザー", "news": "ニュース", "music": "ミュージック", "radio": "ラジオ", "jazz": "ジャズ",
    "rock": "ロック", "pop": "ポップ", "classic": "クラシック", "lo-fi": "ローファイ", "chill": "チル",
    "sunrise": "サンライズ", "sunset": "サンセット", "morning": "モーニング", "evening": "イブニング",
    "weekend": "ウィークエンド", "weekday": "ウィークデー", "today": "トゥデイ", "tomorrow": "トゥモロー",
    # --- common LLM / conversational English ---------------------------------------------------
    "hello": "ハロー", "hi": "ハイ", "hey": "ヘイ", "bye": "バイ", "goodbye": "グッバイ", "yes": "イエス",
    "no": "ノー", "OK": "オーケー", "okay": "オーケー", "sure": "シュア", "sorry": "ソーリー",
    "thank you": "サンキュー", "thanks": "サンクス", "please": "プリーズ", "great": "グレート",
    "nice": "ナイス", "perfect": "パーフェクト", "awesome": "オーサム", "wow": "ワオ",
    "cheers": "チアーズ", "congratulations": "コングラチュレーションズ", "happy birthday": "ハッピーバースデー",
    "merry christmas": "メリークリスマス", "happy new year": "ハッピーニューイヤー", "I": "アイ",
    "I'm": "アイム", "I'll": "アイル", "I've": "アイブ", "I'd": "アイド", "you're": "ユーア",
    "we're": "ウィーア", "they're": "ゼア", "it's": "イッツ", "that's": "ザッツ", "what's": "ワッツ",
    "there's": "ゼアズ", "here's": "ヒアズ", "let's": "レッツ", "don't": "ドント", "doesn't": "ダズント",
    "didn't": "ディドゥント", "can't": "キャント", "won't": "ウォント", "isn't": "イズント",
    "aren't": "アーント", "wasn't": "ワズント", "couldn't": "クドゥント", "shouldn't": "シュドゥント",
    "wouldn't": "ウドゥント", "you'll": "ユール", "we'll": "ウィール", "the": "ザ", "a": "ア", "an": "アン",
    "of": "オブ", "and": "アンド", "or": "オア", "to": "トゥー", "for": "フォー", "with": "ウィズ",
    "in": "イン", "at": "アット", "by": "バイ", "from": "フロム", "is": "イズ", "are": "アー",
    "was": "ワズ", "be": "ビー", "it": "イット", "this": "ジス", "that": "ザット", "you": "ユー",
    "we": "ウィー", "they": "ゼイ", "my": "マイ", "your": "ユア", "our": "アワー", "all": "オール",
    "new": "ニュー", "best": "ベスト", "first": "ファースト", "last": "ラスト", "one": "ワン",
    "two": "ツー", "three": "スリー", "by the way": "バイザウェイ", "FYI": "エフワイアイ", "ASAP": "エーエスエーピー",
    "BTW": "ビーティーダブリュー", "etc": "エトセトラ", "vs": "バーサス", "feat": "フィーチャリング",
    "Mr": "ミスター", "Ms": "ミズ", "Mrs": "ミセス", "Dr": "ドクター",
    # kanalizer's errors on everyday words (its reading in the comment)
    "can": "キャン",  # カン
    "have": "ハブ",  # ヘイブ
    "has": "ハズ",  # ハス
    "had": "ハド",
    "do": "ドゥー",  # ドー
    "does": "ダズ",  # ドーズ
    "did": "ディド",
    "now": "ナウ",  # ノウ
    "here": "ヒア",  # ヘア
    "would": "ウッド",  # ウールド
    "could": "クッド",  # コールド
    "should": "シュッド",  # ショールド
    "done": "ダン",  # ドーン
    "any": "エニー",  # アニー
    "many": "メニー",  # メイニー
    "status": "ステータス",  # スタタス
    "device": "デバイス",  # デヴィス
    "devices": "デバイス",
    "value": "バリュー",
    "also": "オールソー",  # アルソ
    "already": "オールレディ",  # アルレディ
    "always": "オールウェイズ",  # アルウェイズ
    "maybe": "メイビー",  # メイベ
    "minute": "ミニット",  # ミニュート
    "minutes": "ミニッツ",
    "second": "セカンド",  # セコンド
    "usage": "ユーセージ",  # ユーセッジ
    "tonight": "トゥナイト",  # トナイト
    "information": "インフォメーション",
    "available": "アベイラブル",
    "state": "ステート",  # ステイト
    "firmware": "ファームウェア",
    "job": "ジョブ",
    "help": "ヘルプ",
    "christmas": "クリスマス",  # クリストマス
    "tree": "ツリー",  # トリー
    "baby": "ベビー",  # ベイビー
    "everyone": "エブリワン",  # エベリョーネ
    "someone": "サムワン",
    "anyone": "エニワン",
    "everybody": "エブリバディ",
    # number words (a number inside an English sentence is said in English)
    "zero": "ゼロ", "four": "フォー", "five": "ファイブ", "six": "シックス", "seven": "セブン",
    "eight": "エイト", "nine": "ナイン", "ten": "テン", "eleven": "イレブン", "twelve": "トゥエルブ",
    "thirteen": "サーティーン", "fourteen": "フォーティーン", "fifteen": "フィフティーン",
    "sixteen": "シックスティーン", "seventeen": "セブンティーン", "eighteen": "エイティーン",
    "nineteen": "ナインティーン", "twenty": "トゥエンティー", "thirty": "サーティー", "forty": "フォーティー",
    "fifty": "フィフティー", "sixty": "シックスティー", "seventy": "セブンティー", "eighty": "エイティー",
    "ninety": "ナインティー", "hundred": "ハンドレッド", "thousand": "サウザンド",
    # --- acronyms with an established Japanese reading ------------------------------------
    "NG": "エヌジー", "USB": "ユーエスビー", "USB-C": "ユーエスビーシー", "HDMI": "エイチディーエムアイ",
    "CPU": "シーピーユー", "GPU": "ジーピーユー", "PC": "ピーシー", "AI": "エーアイ", "IoT": "アイオーティー",
    "LAN": "ラン", "WAN": "ワン", "VPN": "ブイピーエヌ", "DNS": "ディーエヌエス", "IP": "アイピー",
    "SSID": "エスエスアイディー", "URL": "ユーアールエル", "API": "エーピーアイ", "MQTT": "エムキューティーティー",
    "NFC": "エヌエフシー", "GPS": "ジーピーエス", "SMS": "エスエムエス", "QR": "キューアール",
    "ID": "アイディー", "PIN": "ピン", "SD": "エスディー", "HDD": "エイチディーディー", "SSD": "エスエスディー",
    "RAM": "ラム", "ROM": "ロム", "OS": "オーエス", "CO2": "シーオーツー", "PM2.5": "ピーエムニーテンゴ",
    "UV": "ユーブイ", "AC": "エーシー", "DC": "ディーシー", "IH": "アイエイチ", "ETC": "イーティーシー",
    "5G": "ファイブジー", "4G": "フォージー", "LTE": "エルティーイー", "4K": "ヨンケー", "8K": "ハチケー",
    "HD": "エイチディー", "DVD": "ディーブイディー", "CD": "シーディー", "BD": "ビーディー",
    "EV": "イーブイ", "SUV": "エスユーブイ", "ATM": "エーティーエム", "DIY": "ディーアイワイ",
    "SNS": "エスエヌエス", "FAQ": "エフエーキュー", "PDF": "ピーディーエフ", "JPEG": "ジェイペグ",
    "NASA": "ナサ", "JAXA": "ジャクサ", "NHK": "エヌエイチケー", "JR": "ジェイアール",
    "ASMR": "エーエスエムアール", "BGM": "ビージーエム", "DJ": "ディージェー", "CM": "シーエム",
    "TVOC": "ティーブイオーシー", "VOC": "ブイオーシー", "HVAC": "エイチバック", "RGB": "アールジービー",
    "RGBW": "アールジービーダブリュー", "IR": "アイアール", "RF": "アールエフ", "POE": "ピーオーイー",
    "PoE": "ピーオーイー", "UPS": "ユーピーエス", "OTA": "オーティーエー", "SSH": "エスエスエイチ",
    "HTTP": "エイチティーティーピー", "HTTPS": "エイチティーティーピーエス", "JSON": "ジェイソン",
    "YAML": "ヤムル", "LLM": "エルエルエム", "TTS": "ティーティーエス", "STT": "エスティーティー",
    "AM": "エーエム", "FM": "エフエム", "PM": "ピーエム",
    "Wi-Fi 6": "ワイファイシックス",
}  # fmt: skip

LETTER_READINGS: dict[str, str] = {
    "A": "エー", "B": "ビー", "C": "シー", "D": "ディー", "E": "イー", "F": "エフ", "G": "ジー",
    "H": "エイチ", "I": "アイ", "J": "ジェー", "K": "ケー", "L": "エル", "M": "エム", "N": "エヌ",
    "O": "オー", "P": "ピー", "Q": "キュー", "R": "アール", "S": "エス", "T": "ティー", "U": "ユー",
    "V": "ブイ", "W": "ダブリュー", "X": "エックス", "Y": "ワイ", "Z": "ゼット",
}  # fmt: skip
"""Letter names used to spell acronyms that are not in :data:`LATIN_READINGS`."""

ENGLISH_DIGITS: dict[str, str] = {
    "0": "ゼロ", "1": "ワン", "2": "ツー", "3": "スリー", "4": "フォー",
    "5": "ファイブ", "6": "シックス", "7": "セブン", "8": "エイト", "9": "ナイン",
}  # fmt: skip
"""A single digit glued to an acronym is said in English (``PS5`` ピーエスファイブ, ``MP3``)."""

ENGLISH_ORDINALS: dict[int, str] = {
    1: "ファースト", 2: "セカンド", 3: "サード", 4: "フォース", 5: "フィフス", 6: "シックスス",
    7: "セブンス", 8: "エイス", 9: "ナインス", 10: "テンス", 11: "イレブンス", 12: "トゥエルフス",
}  # fmt: skip
"""``1st`` … ``12th`` (``1st Floor`` ファーストフロア); larger ordinals are read N番目."""
