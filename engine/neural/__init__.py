"""Neural (Style-Bert-VITS2 JP-Extra) voices: import the modules, not this package.

- `voice`: `NeuralVoice`, frontend + BERT + synthesizer behind the `Voice` seam
- `build`: the one voice builder (`VoiceFiles`, `build_voice`, `ModelPool`)
- `loader`: `locate_voice` (which folder of a source holds a voice) and `load_neural_voice`

A voice's typed `config.json` is `engine.voice_config`, a leaf beside this package, so that
the synthesizer backends and the model read it without importing anything of here.
"""
