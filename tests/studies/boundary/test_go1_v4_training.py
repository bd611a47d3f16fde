"""go1_v4 is trained in several runs, each resumed from the learner state the last one committed
(benchmarks/training/go1_v4: its config.json, checkpoint.pt and timing.json). The committed state must
stay resumable by the documented command: its config is the one today's code writes for that command,
and the learner it describes loads it."""

import json
from pathlib import Path

from policylab.config import validated
from policylab.learning import checkpoint
from policylab.learning.learner import CHECKPOINT, TIMING
from policylab.studies.boundary.learn import run
from policylab.studies.boundary.requests import LearnRequest

STATE = Path(__file__).resolve().parents[3] / "benchmarks" / "training" / "go1_v4"
# the documented command: policylab boundary learn --recipe go1_v4 --steps 100663296 --out runs/boundary/learn-go1_v4
COMMAND = {"recipe": "go1_v4", "steps": 100_663_296, "out": "runs/boundary/learn-go1_v4"}


def test_the_committed_go1_v4_state_resumes_under_the_documented_command():
    req = validated(LearnRequest, COMMAND)
    recipe = run.RECIPES[req.recipe]
    assert json.loads((STATE / "config.json").read_text()) == json.loads(json.dumps(run.config(req, recipe)))
    learner = run.build(run.plan(req))
    learner.load_state(checkpoint.read(STATE / CHECKPOINT))
    assert 0 < learner.done <= learner.updates and len(learner.curves["agent_steps"]) == learner.done
    timing = json.loads((STATE / TIMING).read_text())
    assert timing["updates"][-1] == learner.done
