"""What j1 makes, in the forms other tools load: a trained judge as a PEFT adapter, a merged transformers
model or a GGUF file, with its manifest and card (``judge.py``, ``card.py``, ``gguf.py``; ``j1 export
judge``). It imports the judge folder rules (``j1.judging.judges``) and the model registry (``j1.models``); nothing
below the CLI imports it but the commands that export."""
