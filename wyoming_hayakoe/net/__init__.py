"""Connections on every port: their limits (`options`), the HTTP ports' guard
(`http_guard`: a cap, header, body, idle and write timeouts around aiohttp's protocol) and
rate-limited log lines (`ratelog`). Imports nothing of the doors."""
