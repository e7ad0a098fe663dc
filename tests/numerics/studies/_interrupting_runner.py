"""A sweep cell runner that is interrupted (KeyboardInterrupt, as Ctrl-C) at ``model.depth == 3``."""
from tests.numerics.studies._fake_runner import run


def interrupt_on_depth_3(config):
    if config["model"]["depth"] == 3:
        raise KeyboardInterrupt
    return run(config)
