"""A user's files for ``depthcert grow --model ... --data ...`` on a Hugging Face decoder (tests only)."""
from tests.numerics import _hf_tiny


def model():
    return _hf_tiny.build("llama").eval()


def data():
    c = _hf_tiny.corpus()
    return {"train": c.windows("train", 64, 24, seed=3), "probe": c.windows("held", 128, 24, seed=4)}
