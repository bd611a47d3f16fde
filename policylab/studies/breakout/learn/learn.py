"""`policylab breakout learn`: PPO in the vectorized shadow, then the learned network judged on ALE
(docs/breakout.md, "Learning in the shadow")."""

from __future__ import annotations

import time

from policylab.config import claim_out_dir
from policylab.fileio import write_wallclock
from policylab.result import Result
from policylab.studies.breakout.learn import transfer
from policylab.studies.breakout.learn.learner import train
from policylab.studies.breakout.learn.plan import plan
from policylab.studies.breakout.learn.report import build_report, write_learn_report
from policylab.studies.breakout.requests import LearnRequest


def run(req: LearnRequest) -> Result:
    """`policylab breakout learn`: learn (or resume), export policy.onnx, validate on ALE, report."""
    p = plan(req)
    claim_out_dir(req.out, p.config)
    started = time.time()
    learner = train(p)
    onnx_path = req.out / "policy.onnx"
    learner.net.export(p.spec, onnx_path)
    validation, head = None, [f"learned network: {onnx_path}"]
    if req.validate_episodes:
        validation = transfer.validate_network(
            onnx_path,
            out=req.out,
            preset=req.preset,
            protocol=p.protocol,
            shadow=p.shadow,
            episodes=req.validate_episodes,
            gap_episodes=req.gap_episodes,
            exact_episodes=req.exact_episodes,
            executor=req.executor,
            against=p.against,
        )
        head += transfer.headlines(validation)
    report = write_learn_report(req.out, build_report(p, learner, validation))
    write_wallclock(req.out, time.time() - started)  # this invocation's; a resumed run's earlier part is not in it
    return Result(report, tuple(head))
