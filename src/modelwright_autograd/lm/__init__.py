"""Character-level language models on the tensor engine: the corpora (``corpus``), the
models from makemore's bigram to nanoGPT's GPT (``models``), their losses (``scoring``) and
sampling (``sampling``). Training them is ``training.language``; docs/language-models.md
tells the story with measured figures."""
