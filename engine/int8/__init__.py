"""int8 graphs of a voice: made once, gated on fidelity, kept in the cache.

- `kernels`: whether this CPU's int8 kernels saturate on full-range weights;
- `recipe`: how they are made (`QuantSettings`), the shipped sentences, the stamp;
- `calibrate`: the voice's own latents (`voice_latents`), kept as made (`LatentStore`);
- `quantize`: ONNX Runtime's static QDQ quantization of the decoder and the front graph;
- `gate`: the fidelity figures (SNR, log-mel, MCD) and their thresholds;
- `store`: where a voice's graphs live and reading them back (`find_int8`);
- `make`: `make_int8`, the four steps, resumable after a stop;
- `control`: pausing while requests run, cancelling (inside ONNX Runtime too);
- `plan`: one voice's plan (none / ready / pending) and the `Int8Job` that makes it;
- `background`: the server's worker that makes pending graphs and switches voices.

The dependency order is that list's: each module imports only those above it.
"""
