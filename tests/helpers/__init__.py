"""Shared test helpers (import as `tests.helpers.<module>`; fixtures live in tests/conftest.py;
the benchmarks import some of them too, and tests import `benchmarks.*` the same way).

- `paths`: the repository root and the test data folder
- `net`: a free loopback port, a closed endpoint
- `stores`: a loopback stand-in Hugging Face Hub, a moto S3 server, hayakoe-layout trees
- `voices`: small neural voices, hayakoe-layout roots, a stand-in BERT
- `speakers`: waiting on a speaker's lock
- `readings`: the Home Assistant phrase set and how a reading is scored
- `cgroup`: a CPU-quota cgroup (a slower machine) for a server process (the slow-board
  test and benchmark)
"""
