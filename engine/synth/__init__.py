"""The JP-Extra synthesizer (phones + BERT + style → audio) behind one small protocol.

- `common`: `Synthesizer` protocol, `SynthInputs`, `SynthParams`, `SynthOutput`, `NoiseSource`
- `onnx_backend`: `OnnxSynthesizer` (ONNX Runtime on hayakoe's graphs)
- `torch_backend`: `TorchSynthesizer` (PyTorch, CUDA, ``torch.compile``, int8 on CPU)
- `decoder_split`: hayakoe's graph cut at the decoder (`SplitOnnxSynthesizer`)
- `windowed`: windowed decoding with the decoder's exact receptive field
- `export`: ONNX export in hayakoe's format (`export_voice`, `check_export`)
- `ort_cache`: ORT-optimised graphs made once and cached

Nothing here is imported by ``import engine.synth``: each backend pulls onnxruntime or torch
only when its module is imported.
"""
