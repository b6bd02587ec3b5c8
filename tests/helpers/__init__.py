"""Shared test helpers (import as `tests.helpers.<module>`; fixtures live in tests/conftest.py).

- `paths`: the repository root and the test data folder
- `net`: a free loopback port, a closed endpoint
- `stores`: a loopback stand-in Hugging Face Hub, a moto S3 server, hayakoe-layout trees
- `voices`: small neural voices, hayakoe-layout roots, a stand-in BERT
- `speakers`: waiting on a speaker's lock
- `benchmarks`: the benchmark scripts' modules (the real-time listener, ...)
- `cgroup`: a CPU-quota cgroup (a slower machine) for a server process
"""
