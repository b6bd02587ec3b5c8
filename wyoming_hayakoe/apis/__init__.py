"""The engine APIs beside Wyoming (issue 47): the VOICEVOX / AivisSpeech engine API and
OpenAI's ``/v1/audio/speech``, on one port of their own (``--engine-api-port``), over the
same voices, queue and dictionary as Wyoming and the page.

| module | holds |
| --- | --- |
| `options` | flags → `EngineApiSettings` (off by default; loopback unless a token is set) |
| `security` | the Host check, the token, same-origin writes (the page's rules) |
| `errors` | domain errors → HTTP: FastAPI's 422 shape (VOICEVOX), OpenAI's ``error`` |
| `style_ids` | VOICEVOX style IDs: AivisSpeech's for AivisHub voices, stable small ones else |
| `queries` | `AudioQuery` JSON ↔ accent phrases and engine options, each field checked |
| `audio_formats` | int16 PCM → wav, pcm, flac, mp3, opus, aac (PyAV), piece by piece |
| `voicevox` | the VOICEVOX routes |
| `openai` | the OpenAI routes |
| `app` | the aiohttp application and its start/stop beside the Wyoming server |
"""
