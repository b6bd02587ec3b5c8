"""The test suite: `engine/` (the TTS engine), `server/` (the Wyoming server and its CLI),
`deploy/` (Docker images and the Home Assistant add-on; marker `deploy`), `helpers/` (shared
stand-ins and builders), `data/` (small models and golden files)."""
