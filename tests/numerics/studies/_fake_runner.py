"""A cheap deterministic cell runner for the sweep tests (importable by spawned workers)."""
import os
import time


def run(config):
    """Result of a cell: a closed form of its config (and which process ran it)."""
    time.sleep(float(os.environ.get("FAKE_RUNNER_SLEEP", "0")))
    if str(os.getpid()) == os.environ.get("FAKE_DRIVER_PID"):       # a slow driver: workers must take cells
        time.sleep(float(os.environ.get("FAKE_DRIVER_SLEEP", "0")))
    depth, seed = config["model"]["depth"], config["seed"]
    return {"config": config, "value": 10.0 * depth + seed, "quantities": {"M": config["sizes"]["M"]},
            "pid": os.getpid()}


def fail_on_depth_3(config):
    if config["model"]["depth"] == 3:
        raise ArithmeticError("||G|| == 0: condition (C1) fails")
    return run(config)
