"""The web page: hear every voice, try text, see and fix readings (``--http HOST:PORT``).

An aiohttp application in the Wyoming server's process and event loop (`app.WebServer`),
off by default. `options` holds its flags and typed settings (no aiohttp import, so
`wyoming_hayakoe.settings` stays cheap); `security` the gatekeeping (ingress peer, token,
same-origin writes, size limits); `api` the JSON/audio endpoints; `dictionary` the page's
own user-dictionary file (atomic writes, one edit at a time); `warnings` the last warnings
for the Status view; `static/` the page itself (plain HTML/JS/CSS, no build step).
"""
